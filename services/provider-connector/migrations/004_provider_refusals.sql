-- Why an integration is disconnected when the provider, not an operator, did it: 'credentials_rejected'
-- (the provider no longer takes its credentials). Cleared when an operator sets the status.
alter table integrations add column status_reason text;

-- A status callback names the provider's message id; this finds our message for it.
create index sends_by_provider_id on sends (integration_id, provider_message_id);
