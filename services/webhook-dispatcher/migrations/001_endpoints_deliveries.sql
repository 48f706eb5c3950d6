create table endpoints (
  id uuid primary key,
  workspace_id uuid not null,
  url text not null,
  events text[] not null,
  -- The signing secret, sealed with ENCRYPTION_KEY (AES-256-GCM); null when none was given.
  secret_sealed text,
  enabled boolean not null default true,
  created_at timestamptz not null default now()
);
create index endpoints_by_workspace on endpoints (workspace_id) where enabled;

-- One delivery per event and endpoint: a redelivered event never creates a second one.
create table deliveries (
  id uuid primary key,
  workspace_id uuid not null,
  endpoint_id uuid not null references endpoints (id) on delete cascade,
  event_id uuid not null,
  event_type text not null,
  -- The body exactly as signed and sent, so every attempt sends the same bytes.
  body text not null,
  status text not null check (status in ('pending', 'delivered', 'failed')),
  created_at timestamptz not null default now(),
  delivered_at timestamptz,
  unique (endpoint_id, event_id)
);

create table attempts (
  id bigserial primary key,
  delivery_id uuid not null references deliveries (id) on delete cascade,
  attempt int not null,
  at timestamptz not null default now(),
  status_code int,
  error text,
  duration_ms int not null
);
create index attempts_by_delivery on attempts (delivery_id, attempt);
