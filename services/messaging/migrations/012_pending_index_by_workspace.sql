-- The reconciliation job takes stale pending messages in turns by workspace (stalePendingMessages): each
-- workspace's oldest, read from its own part of the index rather than past every other workspace's.
drop index messages_pending;
create index messages_pending on messages (workspace_id, (coalesce(pending_since, created_at)))
  where status = 'pending' and direction = 'outbound' and outcome_unknown_since is null;
