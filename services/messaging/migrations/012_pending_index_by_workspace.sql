-- migrate: without a transaction
-- The reconciliation job reads each workspace's stale pending messages in turn (stalePendingMessages):
-- from that workspace's own part of the index, not past every other workspace's. Built concurrently, so
-- the messages table goes on taking writes from the release still serving while the index is built; an
-- attempt cut short leaves an invalid index that migrate drops before this runs again, and a finished
-- one is kept.
create index concurrently if not exists messages_pending_by_workspace
  on messages (workspace_id, (coalesce(pending_since, created_at)))
  where status = 'pending' and direction = 'outbound' and outcome_unknown_since is null;
drop index concurrently if exists messages_pending;
