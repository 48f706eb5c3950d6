import type { Provider } from '@inbox/contracts';
import type { PoolClient, Queryable } from '@inbox/db';

export interface PendingMessage {
  id: string;
  workspace_id: string;
  conversation_id: string;
  text: string;
  sender_type: 'human' | 'agent' | 'system';
  integration_id: string;
  provider: Provider;
}

/**
 * Outbound messages of every workspace still pending `olderThanMinutes` after they were stored (or, for a
 * retried one, made pending again), oldest first: the reconciliation job's work (a system job, the one
 * query here that spans workspaces).
 */
export async function stalePendingMessages(
  db: Queryable,
  olderThanMinutes: number,
  limit: number,
): Promise<PendingMessage[]> {
  const { rows } = await db.query<PendingMessage>(
    `select m.id, m.workspace_id, m.conversation_id, m.text, m.sender_type, c.integration_id, c.provider
       from messages m join conversations c on c.id = m.conversation_id and c.workspace_id = m.workspace_id
      where m.status = 'pending' and m.direction = 'outbound' and m.outcome_unknown_since is null
        and coalesce(m.pending_since, m.created_at) < now() - $1 * interval '1 minute'
      order by coalesce(m.pending_since, m.created_at) limit $2`,
    [olderThanMinutes, limit],
  );
  return rows;
}

/**
 * Locks the message for this transaction if it is still pending; false when it was settled meanwhile
 * (by its own send, or another replica's reconciliation, which holds the lock and is skipped).
 */
export async function lockIfPending(client: PoolClient, workspaceId: string, messageId: string) {
  const { rowCount } = await client.query(
    `select 1 from messages where workspace_id = $1 and id = $2 and status = 'pending' for update skip locked`,
    [workspaceId, messageId],
  );
  return rowCount === 1;
}

/** Starts a pending message's wait afresh: the reconciliation job looks at it again after a full wait. */
export async function setAside(db: Queryable, workspaceId: string, messageId: string): Promise<void> {
  await db.query(
    `update messages set pending_since = now() where workspace_id = $1 and id = $2 and status = 'pending'`,
    [workspaceId, messageId],
  );
}
