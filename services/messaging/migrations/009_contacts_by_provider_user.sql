-- Channels without phone numbers (the bot channel) key their contacts by the provider's user id, per
-- channel (a Telegram user has the same id for every bot). A contact has a phone, or such a key, or both.
alter table contacts alter column phone drop not null;
alter table contacts add column provider_channel text, add column provider_user_id text;
alter table contacts add constraint contacts_have_a_key
  check (phone is not null or (provider_channel is not null and provider_user_id is not null));
create unique index contacts_by_provider_user on contacts (workspace_id, provider_channel, provider_user_id)
  where provider_user_id is not null;
