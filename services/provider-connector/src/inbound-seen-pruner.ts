import type { Pool } from '@inbox/db';
import { type Logger, Periodic } from '@inbox/service-kit';
import { meter } from '@inbox/telemetry';
import { inboundSeenRetentionMs, pruneInboundSeen } from './store/inbound-seen.js';

const pruned = meter('connector').createCounter('connector.inbound_seen.pruned', {
  description: 'Provider message ids forgotten once past the time a provider may repeat a callback',
});

export interface InboundSeenPrunerOptions {
  pool: Pool;
  logger: Logger;
  retentionMs?: number;
  /** How often ids past their retention are looked for; 5 minutes by default. */
  intervalMs?: number;
  batchSize?: number;
}

/**
 * Forgets provider message ids past their retention (inboundSeenRetentionMs), a batch per statement until
 * none is left: every message taken in leaves one, and a tenant that signs its own callbacks can leave
 * millions a day.
 */
export class InboundSeenPruner {
  private readonly periodic: Periodic;

  constructor(private readonly options: InboundSeenPrunerOptions) {
    this.periodic = new Periodic(
      () => this.prune(),
      options.intervalMs ?? 5 * 60_000,
      (error) => options.logger.warn({ err: error }, 'pruning seen provider message ids failed'),
    );
  }

  start(): void {
    this.periodic.start();
  }

  stop(): Promise<void> {
    return this.periodic.stop();
  }

  /** Deletes every id past the retention, a batch at a time; says how many. */
  async prune(): Promise<number> {
    const { pool, retentionMs = inboundSeenRetentionMs, batchSize = 1_000 } = this.options;
    let total = 0;
    for (;;) {
      const deleted = await pruneInboundSeen(pool, retentionMs, batchSize);
      total += deleted;
      if (deleted < batchSize) break;
    }
    if (total > 0) pruned.add(total);
    return total;
  }
}
