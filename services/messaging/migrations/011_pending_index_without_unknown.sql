-- Messages of unknown outcome stay pending, are never the reconciliation job's again, and are the oldest:
-- at the head of the old index, every pass read past all of them (one tenant's silent provider made
-- thousands) before it reached a message it could settle.
drop index messages_pending;
create index messages_pending on messages ((coalesce(pending_since, created_at)))
  where status = 'pending' and direction = 'outbound' and outcome_unknown_since is null;
