-- A Meta app posts every account's events to its one callback URL: the connector finds the integrations
-- of the other accounts a callback names by channel, account and app. The app is kept as a keyed digest
-- of its secret (IntegrationStore.appKey), never the secret; rows from before have none.
alter table integrations add column app_key text;
create index integrations_by_account on integrations (channel, account_id, app_key) where status = 'connected';
