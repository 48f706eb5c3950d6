-- Meta unsubscribes an app whose webhooks fail for an hour: each Messenger and Instagram integration's
-- subscription is checked now and then (callbackSubscriptionSweep), one worker of one replica per turn,
-- claimed by this stamp.
alter table integrations add column if not exists subscription_checked_at timestamptz;
