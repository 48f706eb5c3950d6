-- Outbound messages still pending, oldest first, for the reconciliation job: only the few in limbo are
-- indexed, never the sent or received ones.
create index messages_pending on messages (created_at) where status = 'pending' and direction = 'outbound';
