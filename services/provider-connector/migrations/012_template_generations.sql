-- migrate: without a transaction
-- A catalogue is written as a new generation in short statements and switched to in one (TemplateStore):
-- written in one transaction, a maximal one held every service's outbox relay for a second or more, since
-- a relay publishes only what committed before the oldest transaction still running.
alter table integrations add column if not exists templates_generation bigint not null default 0;
alter table templates add column if not exists generation bigint not null default 0;
create sequence if not exists template_generations;
create unique index concurrently if not exists templates_by_generation
  on templates (integration_id, generation, name, language);
-- Two generations of a catalogue hold the same names for as long as a switch takes.
alter table templates drop constraint if exists templates_pkey;
