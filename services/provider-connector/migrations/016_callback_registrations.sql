-- A provider that keeps one callback URL per account (a Telegram bot's webhook, an Evolution or Z-API
-- instance's) calls the integration that registered last. When each registration was accepted tells
-- which other integrations of the account no longer hear it (IntegrationStore.callbackRegistered).
alter table integrations add column callback_registered_at timestamptz;
