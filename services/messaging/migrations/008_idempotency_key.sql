-- The caller's Idempotency-Key (scoped by the gateway: "<verb>:<key>") travels with the command and is
-- stored on the message it created, in the transaction that stores it: a retry after the gateway lost
-- track of the key (it died mid-request) finds this message instead of creating a second one.
alter table messages add column idempotency_key text;
-- What the first answer said that the message alone does not (whether the contact and the conversation
-- were created by it), so a retry answers the same.
alter table messages add column first_answer jsonb;
create unique index messages_idempotency on messages (workspace_id, idempotency_key) where idempotency_key is not null;
