-- What the subscription check knows of a Meta account between its turns: when a check last found it
-- subscribed (Meta gives up on an hour of failed webhooks, so what came from an hour before that may be
-- lost once it is unsubscribed), and, while a read back of the messages it posted nowhere has not
-- finished, where that read starts: a read cut short (a throttle, a timeout, a stop) is taken up again
-- at the next check, even one that finds the account subscribed by then.
alter table integrations add column if not exists subscription_confirmed_at timestamptz;
alter table integrations add column if not exists read_back_since timestamptz;
