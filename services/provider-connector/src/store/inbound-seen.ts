import type { Queryable } from '@inbox/db';
import { pruneByAge } from './prune-by-age.js';

// Ids are marked seen by the statement that writes their events (recordInTransaction): one statement
// for a callback's part, where an insert per id held the part's transaction open a round trip each.

/**
 * How long a provider message id is remembered: well past the longest a provider retries a callback
 * (Meta's 36 hours). A repeat later still is taken in by messaging only once too: its inbound messages
 * are unique by conversation and provider id.
 */
export const inboundSeenRetentionMs = 7 * 24 * 3_600_000;

/** Deletes up to `batchSize` ids seen before the retention, oldest first, and says how many. */
export const pruneInboundSeen = (db: Queryable, retentionMs: number, batchSize: number): Promise<number> =>
  pruneByAge(db, { table: 'inbound_seen', dated: 'seen_at' }, retentionMs, batchSize);
