create table contacts (
  id uuid primary key,
  workspace_id uuid not null,
  phone text not null,
  name text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (workspace_id, phone)
);

-- One conversation per contact and integration.
create table conversations (
  id uuid primary key,
  workspace_id uuid not null,
  contact_id uuid not null references contacts (id),
  integration_id uuid not null,
  channel text not null,
  provider text not null,
  status text not null default 'open' check (status in ('open', 'assigned', 'resolved')),
  assigned_to_type text check (assigned_to_type in ('human', 'agent')),
  assigned_to_id uuid,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (workspace_id, contact_id, integration_id)
);

create table messages (
  id uuid primary key,
  workspace_id uuid not null,
  conversation_id uuid not null references conversations (id),
  direction text not null check (direction in ('inbound', 'outbound', 'internal')),
  sender_type text check (sender_type in ('human', 'agent', 'system', 'contact')),
  text text not null,
  type text not null default 'text',
  status text not null check (status in ('pending', 'sent', 'failed', 'received', 'recorded')),
  provider_message_id text,
  error text,
  created_at timestamptz not null default now(),
  sent_at timestamptz
);
create index messages_by_conversation on messages (conversation_id, created_at);
