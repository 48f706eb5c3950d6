import type { Queryable } from '@inbox/db';

// Ids are marked seen by the statement that writes their events (recordInTransaction): one statement
// for a callback's part, where an insert per id held the part's transaction open a round trip each.

/**
 * How long a provider message id is remembered: well past the longest a provider retries a callback
 * (Meta's 36 hours). A repeat later still is taken in by messaging only once too: its inbound messages
 * are unique by conversation and provider id.
 */
export const inboundSeenRetentionMs = 7 * 24 * 3_600_000;

/**
 * Deletes up to `batchSize` ids seen before the retention, oldest first, and says how many. Replicas may
 * prune at once: each skips the rows another is deleting.
 */
export async function pruneInboundSeen(
  db: Queryable,
  retentionMs: number,
  batchSize: number,
): Promise<number> {
  const { rowCount } = await db.query(
    `delete from inbound_seen where ctid = any(array(
       select ctid from inbound_seen where seen_at < now() - $1 * interval '1 millisecond'
        order by seen_at limit $2 for update skip locked))`,
    [retentionMs, batchSize],
  );
  return rowCount ?? 0;
}
