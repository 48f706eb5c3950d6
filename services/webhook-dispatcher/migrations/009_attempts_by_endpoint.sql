-- The per-endpoint rate limit counts an endpoint's attempts of the last second. Counted through the
-- deliveries table, that joined every attempt of the last second to its delivery, and Postgres answered
-- it by scanning the whole deliveries table (finished ones included, kept for the retention days) on
-- every lease. Attempts now name their endpoint, and an index serves the count. Attempts written before
-- this step have none; they are all more than a second old.
alter table attempts add column endpoint_id uuid;
create index attempts_recent_by_endpoint on attempts (endpoint_id, at);
drop index attempts_recent;
