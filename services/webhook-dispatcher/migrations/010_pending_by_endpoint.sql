-- The lease visits each endpoint that has pending deliveries (a loose scan: one index probe per
-- endpoint, however long its queue) and takes the earliest due of each up to the endpoint's room. Taking
-- the earliest pending of the whole table instead let one endpoint's backlog, at its concurrency cap,
-- fill every lease's window and hold back every other workspace's deliveries until it drained; and a
-- plan made on stale statistics sorted the whole backlog on every lease.
create index deliveries_pending_by_endpoint on deliveries (endpoint_id, next_attempt_at) where status = 'pending';
drop index deliveries_due;
-- An endpoint's attempts in flight, counted by endpoint.
create index deliveries_sending_by_endpoint on deliveries (endpoint_id, lease_until) where status = 'sending';
-- Every delivery passes through pending and sending, and leaves an entry behind in each of those
-- indexes until a vacuum removes it; at the default thresholds (a fifth of the table, which keeps
-- finished deliveries for the retention days) that was millions of entries for the lease to step over.
-- Vacuumed after a fixed number of changed rows instead.
alter table deliveries set (
  autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 10000,
  autovacuum_analyze_scale_factor = 0, autovacuum_analyze_threshold = 10000
);
