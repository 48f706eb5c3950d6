-- A send is recorded when its provider call starts, not only once it succeeded: a row without a provider
-- id is an attempt whose outcome is unknown (the process died or the provider did not answer in time
-- during the call). Such a message is never sent again blindly (at most one provider call per message).
alter table sends alter column provider_message_id drop not null;
alter table sends alter column sent_at drop not null;
alter table sends add column attempted_at timestamptz not null default now();
