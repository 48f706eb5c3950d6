-- When a delivery reached its final state (delivered or failed), for the retention pruner; cleared when a
-- resend or replay makes it pending again. Finished deliveries of before this step take their delivery
-- time, else their last attempt's, else their creation's.
alter table deliveries add column finished_at timestamptz;
update deliveries d
   set finished_at = coalesce(d.delivered_at, (select max(a.at) from attempts a where a.delivery_id = d.id), d.created_at)
 where d.status in ('delivered', 'failed');
-- Only finished deliveries are ever pruned: pending and sending ones are not in this index.
create index deliveries_finished on deliveries (finished_at) where status in ('delivered', 'failed');
