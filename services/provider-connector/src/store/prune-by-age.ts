import type { Queryable } from '@inbox/db';

/** A bookkeeping table the pruner keeps short, and the column its rows are dated by. */
export type AgedTable =
  | { table: 'inbound_seen'; dated: 'seen_at' }
  | { table: 'missed_callbacks_taken'; dated: 'taken_at' };

/**
 * Deletes up to `batchSize` rows dated before the retention, oldest first, and says how many. Replicas may
 * prune at once: each skips the rows another is deleting.
 */
export async function pruneByAge(
  db: Queryable,
  { table, dated }: AgedTable,
  retentionMs: number,
  batchSize: number,
): Promise<number> {
  const { rowCount } = await db.query(
    `delete from ${table} where ctid = any(array(
       select ctid from ${table} where ${dated} < now() - $1 * interval '1 millisecond'
        order by ${dated} limit $2 for update skip locked))`,
    [retentionMs, batchSize],
  );
  return rowCount ?? 0;
}
