create table workspaces (
  id uuid primary key,
  name text not null,
  status text not null default 'active' check (status in ('active', 'inactive', 'suspended')),
  default_country_code text not null default '55',
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

-- One live key per workspace; only its SHA-256 is kept. Rotation replaces the row.
create table api_keys (
  workspace_id uuid primary key references workspaces (id) on delete cascade,
  key_hash bytea not null unique,
  key_hint text not null,
  created_at timestamptz not null default now()
);
