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
  /** When it was stored: before any attempt to send it, whatever set it aside or retried it since. */
  created_at: Date;
}

// Stale: pending past the job's wait, and not of unknown outcome (those are never the job's again). The
// predicate messages_pending_by_workspace is built on, so both queries read that index.
const stale = `m.status = 'pending' and m.direction = 'outbound' and m.outcome_unknown_since is null
        and coalesce(m.pending_since, m.created_at) < now() - $1 * interval '1 minute'`;

/**
 * The workspaces with outbound messages still pending `olderThanMinutes` after they were stored (or, for a
 * retried one, made pending again): the reconciliation job's work (a system job, the one place here that
 * spans workspaces). One step through the index per workspace, from one to the next (Postgres has no
 * skip scan): a `distinct` read every stale message, and the job asks again every round.
 */
export async function workspacesWithStalePending(db: Queryable, olderThanMinutes: number): Promise<string[]> {
  const { rows } = await db.query<{ workspace_id: string }>(
    `with recursive w (workspace_id) as (
       (select m.workspace_id from messages m where ${stale} order by m.workspace_id limit 1)
       union all
       select (select m.workspace_id from messages m
                where ${stale} and m.workspace_id > w.workspace_id order by m.workspace_id limit 1)
         from w where w.workspace_id is not null
     )
     select workspace_id from w where workspace_id is not null`,
    [olderThanMinutes],
  );
  return rows.map((row) => row.workspace_id);
}

/**
 * Up to `perWorkspace` of each given workspace's stale pending messages, oldest first, taken in turns:
 * each workspace's oldest, then each one's second, and so on. Oldest first across workspaces, one
 * workspace with thousands left pending (a provider silent for an hour) held every other workspace's
 * behind them for as long as settling them all took.
 */
export async function stalePendingMessages(
  db: Queryable,
  olderThanMinutes: number,
  workspaceIds: readonly string[],
  perWorkspace: number,
): Promise<PendingMessage[]> {
  const { rows } = await db.query<PendingMessage>(
    `select p.id, p.workspace_id, p.conversation_id, p.text, p.sender_type, p.integration_id, p.provider,
            p.created_at
       from unnest($2::uuid[]) as w (workspace_id)
       cross join lateral (
         select m.id, m.workspace_id, m.conversation_id, m.text, m.sender_type, c.integration_id, c.provider,
                m.created_at, coalesce(m.pending_since, m.created_at) as since,
                row_number() over (order by coalesce(m.pending_since, m.created_at)) as turn
           from messages m
           join conversations c on c.id = m.conversation_id and c.workspace_id = m.workspace_id
          where m.workspace_id = w.workspace_id and ${stale}
          order by coalesce(m.pending_since, m.created_at) limit $3
       ) p
      order by p.turn, p.since`,
    [olderThanMinutes, workspaceIds, perWorkspace],
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
