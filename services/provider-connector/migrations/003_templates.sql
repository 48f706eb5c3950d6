-- Each official integration's templates as the provider lists them, refreshed from its API.
create table templates (
  integration_id uuid not null references integrations (id) on delete cascade,
  name text not null,
  language text not null,
  status text not null,
  body text not null,
  header_format text,
  buttons jsonb not null default '[]',
  fetched_at timestamptz not null default now(),
  primary key (integration_id, name, language)
);
alter table integrations add column templates_refreshed_at timestamptz;
