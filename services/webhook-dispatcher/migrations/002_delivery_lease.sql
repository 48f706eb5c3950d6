-- A delivery being attempted is leased, so two handlers of the same event (a redelivery, another
-- replica) never post it at once.
alter table deliveries drop constraint deliveries_status_check;
alter table deliveries add constraint deliveries_status_check check (status in ('pending', 'sending', 'delivered', 'failed'));
alter table deliveries add column lease_until timestamptz;
alter table attempts add column workspace_id uuid;
update attempts a set workspace_id = d.workspace_id from deliveries d where d.id = a.delivery_id;
alter table attempts alter column workspace_id set not null;
