-- Where each contact stands in each pipeline: one current stage.
create table lead_positions (
  workspace_id uuid not null,
  pipeline_id uuid not null references pipelines (id) on delete cascade,
  contact_id uuid not null,
  stage text not null,
  moved_at timestamptz not null,
  primary key (pipeline_id, contact_id)
);
create index lead_positions_by_contact on lead_positions (workspace_id, contact_id);
create index lead_positions_by_stage on lead_positions (pipeline_id, stage);

-- Every move, with who made it (the API key's hint, or the admin operation).
create table lead_moves (
  id uuid primary key,
  workspace_id uuid not null,
  pipeline_id uuid not null references pipelines (id) on delete cascade,
  contact_id uuid not null,
  from_stage text,
  to_stage text not null,
  moved_at timestamptz not null default now(),
  moved_by text not null,
  conversation_id uuid
);
create index lead_moves_by_contact on lead_moves (workspace_id, pipeline_id, contact_id, moved_at);
