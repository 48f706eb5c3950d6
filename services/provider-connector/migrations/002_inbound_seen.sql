-- Provider message ids already taken in, so a provider's repeated callback is announced once.
create table inbound_seen (
  integration_id uuid not null references integrations (id) on delete cascade,
  provider_message_id text not null,
  seen_at timestamptz not null default now(),
  primary key (integration_id, provider_message_id)
);
