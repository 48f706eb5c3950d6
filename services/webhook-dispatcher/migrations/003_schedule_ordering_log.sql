-- Endpoints: per-endpoint ordering, why an endpoint was disabled, since when it has been failing.
alter table endpoints add column ordered boolean not null default false;
alter table endpoints add column disabled_reason text;
alter table endpoints add column failing_since timestamptz;
alter table endpoints add column updated_at timestamptz not null default now();

-- Deliveries are scheduled here, not in memory: a retry survives any restart, and every replica's
-- worker leases due rows with skip-locked, so no attempt is made twice.
alter table deliveries add column next_attempt_at timestamptz;
alter table deliveries add column attempts int not null default 0;
-- Ordering: the event's position in the stream, within the event's conversation.
alter table deliveries add column stream_seq bigint not null default 0;
alter table deliveries add column ordering_key text;
alter table deliveries add column last_error text;
update deliveries set next_attempt_at = created_at where status in ('pending', 'sending');
create index deliveries_due on deliveries (next_attempt_at) where status = 'pending';
create index deliveries_leased on deliveries (lease_until) where status = 'sending';
create index deliveries_in_order on deliveries (endpoint_id, ordering_key, stream_seq) where status in ('pending', 'sending');
create index deliveries_log on deliveries (workspace_id, endpoint_id, created_at desc);

-- The first 2 KB of what the receiver answered, for the delivery log.
alter table attempts add column response_body text;
