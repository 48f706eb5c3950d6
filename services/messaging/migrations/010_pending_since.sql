-- When a retried message became pending again (a refused send retried with its Idempotency-Key): the
-- reconciliation job waits as long for its send as for a new message's, counted from then. Null for a
-- message pending since it was stored, whose created_at says when.
alter table messages add column pending_since timestamptz;
drop index messages_pending;
create index messages_pending on messages ((coalesce(pending_since, created_at)))
  where status = 'pending' and direction = 'outbound';
