import type { Queryable } from '@inbox/db';
import type { ClaimedIntegration } from '../integration-sweep.js';

/** How long a missed callback's key is kept: past the two days Mercado Livre lists one for. */
export const missedTakenRetentionMs = 3 * 24 * 3_600_000;

/** The missed callbacks' polls and what they took (migration 019). */
export class MissedCallbackStore {
  constructor(private readonly db: Queryable) {}

  /**
   * Claims the connected integration of `channels` polled longest ago and not within `everyMs`, outside
   * `busyWorkspaces`, stamped now: no worker of any replica claims it again for `everyMs`.
   */
  async claimDue(options: {
    channels: readonly string[];
    everyMs: number;
    busyWorkspaces: readonly string[];
  }): Promise<ClaimedIntegration | undefined> {
    const { rows } = await this.db.query<ClaimedIntegration>(
      `update integrations set missed_polled_at = now()
        where id = (
          select id from integrations
           where channel = any($1) and status = 'connected'
             and (missed_polled_at is null or missed_polled_at < now() - $2 * interval '1 millisecond')
             and workspace_id <> all($3::uuid[])
           order by missed_polled_at nulls first, id
           limit 1
           for update skip locked)
        returning id, workspace_id`,
      [options.channels, options.everyMs, options.busyWorkspaces],
    );
    return rows[0];
  }

  /** Of the integration's missed callbacks' keys, those not kept before. */
  async notTaken(integrationId: string, keys: readonly string[]): Promise<Set<string>> {
    const { rows } = await this.db.query<{ key: string }>(
      `select key from unnest($2::text[]) as key
        where not exists (
          select 1 from missed_callbacks_taken taken
           where taken.integration_id = $1 and taken.callback_key = key)`,
      [integrationId, keys],
    );
    return new Set(rows.map((row) => row.key));
  }

  /** Remembers the integration's missed callbacks now kept. */
  async taken(integrationId: string, keys: readonly string[]): Promise<void> {
    await this.db.query(
      `insert into missed_callbacks_taken (integration_id, callback_key)
       select $1, key from unnest($2::text[]) as key
       on conflict do nothing`,
      [integrationId, keys],
    );
  }
}

/**
 * Deletes up to `batchSize` keys taken before the retention, oldest first, and says how many. Replicas may
 * prune at once: each skips the rows another is deleting.
 */
export async function pruneMissedTaken(
  db: Queryable,
  retentionMs: number,
  batchSize: number,
): Promise<number> {
  const { rowCount } = await db.query(
    `delete from missed_callbacks_taken where ctid = any(array(
       select ctid from missed_callbacks_taken where taken_at < now() - $1 * interval '1 millisecond'
        order by taken_at limit $2 for update skip locked))`,
    [retentionMs, batchSize],
  );
  return rowCount ?? 0;
}
