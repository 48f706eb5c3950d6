-- The lease visits each endpoint that has pending deliveries (a loose scan: one index probe per
-- endpoint, however long its queue) and takes the earliest due of each up to the endpoint's room. Taking
-- the earliest pending of the whole table instead let one endpoint's backlog, at its concurrency cap,
-- fill every lease's window and hold back every other workspace's deliveries until it drained; and a
-- plan made on stale statistics sorted the whole backlog on every lease.
create index deliveries_pending_by_endpoint on deliveries (endpoint_id, next_attempt_at) where status = 'pending';
drop index deliveries_due;
