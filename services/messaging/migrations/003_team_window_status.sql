create table members (
  id uuid primary key,
  workspace_id uuid not null,
  name text not null,
  email text not null,
  created_at timestamptz not null default now(),
  unique (workspace_id, email)
);

create table agents (
  id uuid primary key,
  workspace_id uuid not null,
  name text not null,
  created_at timestamptz not null default now()
);

-- When the contact last wrote on this conversation: the official channel's 24-hour window runs from it.
alter table conversations add column last_inbound_at timestamptz;

-- What the provider later said of an outbound message: sent, delivered, read or failed.
alter table messages add column delivery_status text;
alter table messages add column delivery_error text;

-- A provider's message id is seen once per conversation, however often the provider delivers it.
create unique index messages_inbound_once on messages (conversation_id, provider_message_id) where direction = 'inbound';
create index messages_by_provider_id on messages (workspace_id, provider_message_id);
