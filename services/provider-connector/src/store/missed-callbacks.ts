import type { Queryable } from '@inbox/db';
import { pruneByAge } from './prune-by-age.js';

/** How long a missed callback's key is kept: past the two days Mercado Livre lists one for. */
export const missedTakenRetentionMs = 3 * 24 * 3_600_000;

/** What the missed callbacks' polls took (migration 019). */
export class MissedCallbackStore {
  constructor(private readonly db: Queryable) {}

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

/** Deletes up to `batchSize` keys taken before the retention, oldest first, and says how many. */
export const pruneMissedTaken = (db: Queryable, retentionMs: number, batchSize: number): Promise<number> =>
  pruneByAge(db, { table: 'missed_callbacks_taken', dated: 'taken_at' }, retentionMs, batchSize);
