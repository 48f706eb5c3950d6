import { inBatches, type Pool } from '@inbox/db';
import { type Logger, Periodic } from '@inbox/service-kit';
import { meter } from '@inbox/telemetry';
import { inboundSeenRetentionMs, pruneInboundSeen } from './store/inbound-seen.js';
import { pruneSends, sendRetentionMs } from './store/sends.js';

const seenPruned = meter('connector').createCounter('connector.inbound_seen.pruned', {
  description: 'Provider message ids forgotten once past the time a provider may repeat a callback',
});
const sendsPruned = meter('connector').createCounter('connector.sends.pruned', {
  description: 'Records of sends the providers accepted, forgotten once past their retention',
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
  if (total > 0) seenPruned.add(total);
  return total;
}

/**
 * Forgets every send the provider accepted before its retention (sendRetentionMs), a batch per statement,
 * and says how many: every message sent leaves one, and external send has no rate of its own.
 */
export async function forgetSends(
  pool: Pool,
  { retentionMs = sendRetentionMs, batchSize = 1_000 } = {},
): Promise<number> {
  const total = await inBatches((size) => pruneSends(pool, retentionMs, size), batchSize);
  if (total > 0) sendsPruned.add(total);
  return total;
}

/** Both every five minutes, beside the callbacks and sends and never inside one. */
export const bookkeepingPruner = (pool: Pool, logger: Logger) =>
  new Periodic(
    async () => {
      await forgetSeenIds(pool);
      await forgetSends(pool);
    },
    5 * 60_000,
    (error) => logger.warn({ err: error }, 'pruning seen provider message ids or sends failed'),
  );
