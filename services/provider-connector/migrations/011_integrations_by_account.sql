-- A Meta app posts every account's events to its one callback URL: the connector finds the integrations
-- of the other accounts a callback names by channel and account.
create index integrations_by_account on integrations (channel, account_id) where status = 'connected';
