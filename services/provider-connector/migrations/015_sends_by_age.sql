-- migrate: without a transaction
-- A send the provider accepted is remembered 30 days (a repeated command is answered from it, and a
-- status callback finds our message by it), then deleted oldest first (forgetSends): kept for ever, the
-- table grew by a row with every message sent. An attempt whose outcome is unknown has no provider id
-- and is kept: it is what stops the message being sent twice. By the time we took it, not the provider's.
create index concurrently if not exists sends_by_age on sends (attempted_at) where provider_message_id is not null;
