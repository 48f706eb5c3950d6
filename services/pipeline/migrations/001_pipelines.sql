-- Pipelines (Kanban funnels) of a workspace; stages are kept as stages_config, addressed by key.
create table pipelines (
  id uuid primary key,
  workspace_id uuid not null,
  name text not null,
  stages_config jsonb not null default '[]',
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index pipelines_by_workspace on pipelines (workspace_id);
