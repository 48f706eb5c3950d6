import { inBatches, type Pool } from '@inbox/db';
import { type Logger, Periodic } from '@inbox/service-kit';
import { meter } from '@inbox/telemetry';
import { inboundSeenRetentionMs, pruneInboundSeen } from './store/inbound-seen.js';

const pruned = meter('connector').createCounter('connector.inbound_seen.pruned', {
  description: 'Provider message ids forgotten once past the time a provider may repeat a callback',
});

/**
 * Forgets every provider message id past its retention (inboundSeenRetentionMs), a batch per statement
 * until none is left, and says how many: every message taken in leaves one, and a tenant that signs its
 * own callbacks can leave millions a day.
 */
export async function forgetSeenIds(
  pool: Pool,
  { retentionMs = inboundSeenRetentionMs, batchSize = 1_000 } = {},
): Promise<number> {
  const total = await inBatches((size) => pruneInboundSeen(pool, retentionMs, size), batchSize);
  if (total > 0) pruned.add(total);
  return total;
}

/** forgetSeenIds every five minutes, beside the callbacks and never inside one. */
export const seenIdsPruner = (pool: Pool, logger: Logger) =>
  new Periodic(
    () => forgetSeenIds(pool),
    5 * 60_000,
    (error) => logger.warn({ err: error }, 'pruning seen provider message ids failed'),
  );
