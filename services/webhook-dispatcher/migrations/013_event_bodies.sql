-- A public event's body, stored once for every delivery of it. Each delivery held its own copy: a
-- workspace with fifty endpoints wrote fifty copies of each event (up to 48 KiB of inbound text), and a
-- burst of its inbound messages wrote hundreds of megabytes a second through the one statement that
-- schedules every workspace's deliveries.
create table event_bodies (
  workspace_id uuid not null,
  event_id uuid not null,
  body text not null,
  created_at timestamptz not null default now(),
  primary key (workspace_id, event_id)
);
-- For the pruner, which deletes a body once no delivery of its event is left.
create index event_bodies_by_age on event_bodies (created_at);
-- Deliveries scheduled from now on carry no copy; those of before, and test deliveries, keep theirs.
alter table deliveries alter column body drop not null;
