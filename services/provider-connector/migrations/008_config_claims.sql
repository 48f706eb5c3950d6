-- A claim on an integration's config while one replica refreshes its OAuth tokens at the provider: the
-- others wait for the new pair without a row lock, so no database connection is held across the call.
alter table integrations add column config_claim uuid, add column config_claimed_until timestamptz;
