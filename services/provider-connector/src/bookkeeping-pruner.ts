import { inBatches, type Pool } from '@inbox/db';
import { type Logger, Periodic } from '@inbox/service-kit';
import { meter } from '@inbox/telemetry';
import { inboundSeenRetentionMs, pruneInboundSeen } from './store/inbound-seen.js';
import { missedTakenRetentionMs, pruneMissedTaken } from './store/missed-callbacks.js';
import { pruneSends, sendRetentionMs } from './store/sends.js';

const seenPruned = meter('connector').createCounter('connector.inbound_seen.pruned', {
  description: 'Provider message ids forgotten once past the time a provider may repeat a callback',
});
const sendsPruned = meter('connector').createCounter('connector.sends.pruned', {
  description: 'Records of sends the providers accepted, forgotten once past their retention',
});

const missedPruned = meter('connector').createCounter('connector.missed_callbacks_taken.pruned', {
  description: 'Keys of missed callbacks taken in, forgotten once the provider no longer lists them',
});

type PruneBatch = (pool: Pool, retentionMs: number, batchSize: number) => Promise<number>;

/**
 * A forget: deletes what `prune` finds past `retentionMs`, a batch per statement until a batch finds
 * fewer, counts it on `counter` and says how many.
 */
const forgetter =
  (prune: PruneBatch, counter: typeof seenPruned, defaultRetentionMs: number) =>
  async (pool: Pool, { retentionMs = defaultRetentionMs, batchSize = 1_000 } = {}): Promise<number> => {
    const total = await inBatches((size) => prune(pool, retentionMs, size), batchSize);
    if (total > 0) counter.add(total);
    return total;
  };

/**
 * Forgets every provider message id past its retention (inboundSeenRetentionMs): every message taken in
 * leaves one, and a tenant that signs its own callbacks can leave millions a day.
 */
export const forgetSeenIds = forgetter(pruneInboundSeen, seenPruned, inboundSeenRetentionMs);

/**
 * Forgets every send known sent before its retention (sendRetentionMs): every message sent leaves one, and
 * external send has no rate of its own.
 */
export const forgetSends = forgetter(pruneSends, sendsPruned, sendRetentionMs);

/** Forgets the keys of missed callbacks taken in once the provider no longer lists them (missedTakenRetentionMs). */
export const forgetMissedTaken = forgetter(pruneMissedTaken, missedPruned, missedTakenRetentionMs);

/** All three every five minutes, beside the callbacks and sends and never inside one. */
export const bookkeepingPruner = (pool: Pool, logger: Logger) =>
  new Periodic(
    async () => {
      await forgetSeenIds(pool);
      await forgetSends(pool);
      await forgetMissedTaken(pool);
    },
    5 * 60_000,
    (error) =>
      logger.warn({ err: error }, 'pruning seen provider message ids, sends or missed callbacks failed'),
  );
