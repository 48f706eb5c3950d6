-- What the kept callbacks' backlog gauges read (KeptCallbacks.refreshBacklog): how many each workspace
-- has, kept by the same statements as their weight, and the oldest one's age, by an index rather than a
-- scan of a table every workspace may fill to its bound.
alter table callback_inbox_usage add column callbacks bigint not null default 0;
update callback_inbox_usage usage
   set callbacks = (select count(*) from callback_inbox kept where kept.workspace_id = usage.workspace_id);
create index callback_inbox_by_age on callback_inbox (received_at);
