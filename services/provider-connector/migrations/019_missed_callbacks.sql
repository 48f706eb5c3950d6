-- Providers that keep the callbacks they gave up delivering (Mercado Livre's missed_feeds, for two days)
-- are polled for them (MissedCallbacks): when each integration was last claimed for a poll, so one worker
-- of one replica polls it per turn, and which of its missed callbacks were kept, so each is taken once for
-- as long as the provider lists it.
alter table integrations add column if not exists missed_polled_at timestamptz;
create table missed_callbacks_taken (
  integration_id uuid not null,
  callback_key text not null,
  taken_at timestamptz not null default now(),
  primary key (integration_id, callback_key)
);
create index missed_callbacks_taken_by_age on missed_callbacks_taken (taken_at);
