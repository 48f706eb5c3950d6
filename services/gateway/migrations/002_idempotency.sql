-- Idempotency-Key records: one per workspace and key, kept 24 hours.
create table idempotency_keys (
  workspace_id uuid not null,
  key text not null,
  request_hash text not null,
  status text not null check (status in ('in_progress', 'completed')),
  response_status int,
  response_body jsonb,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  primary key (workspace_id, key)
);
create index idempotency_keys_by_age on idempotency_keys (created_at);
