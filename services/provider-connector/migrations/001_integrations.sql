create table integrations (
  id uuid primary key,
  workspace_id uuid not null,
  channel text not null,
  provider text not null,
  name text,
  status text not null check (status in ('connected', 'disconnected')),
  -- Provider credentials, sealed with ENCRYPTION_KEY (AES-256-GCM); never stored in clear.
  config_sealed text not null,
  account_id text not null,
  connected_at timestamptz,
  created_at timestamptz not null default now()
);
create index integrations_by_channel on integrations (workspace_id, channel, connected_at desc) where status = 'connected';

-- What each message id was answered by the provider, so a repeated send command does not send twice.
create table sends (
  message_id uuid primary key,
  workspace_id uuid not null,
  integration_id uuid not null references integrations (id),
  provider_message_id text not null,
  sent_at timestamptz not null
);
