import { inBatches } from '@inbox/db';
import { type Logger, Periodic } from '@inbox/service-kit';
import { meter } from '@inbox/telemetry';
import type { BodyCursor, DeliveryStore } from './store/deliveries.js';

const pruned = meter('webhook-dispatcher').createCounter('webhook.deliveries.pruned', {
  description: 'Finished webhook deliveries (with their attempts) deleted once past their retention',
});

export interface DeliveryPrunerOptions {
  deliveries: DeliveryStore;
  logger: Logger;
  /** WEBHOOK_RETENTION_DAYS. */
  retentionDays: number;
  /** How often finished deliveries past their retention are looked for; 5 minutes by default. */
  intervalMs?: number;
  batchSize?: number;
}

/**
 * Deletes finished deliveries past their retention, beside the delivery worker and never inside it: a
 * batch per statement (`for update skip locked`, so replicas prune side by side and no lease waits on
 * it) until none is left.
 */
export class DeliveryPruner {
  private readonly periodic: Periodic;

  constructor(private readonly options: DeliveryPrunerOptions) {
    this.periodic = new Periodic(
      () => this.prune(),
      options.intervalMs ?? 5 * 60_000,
      (error) => options.logger.warn({ err: error }, 'delivery pruning failed'),
    );
  }

  start(): void {
    this.periodic.start();
  }

  stop(): Promise<void> {
    return this.periodic.stop();
  }

  /**
   * Deletes every finished delivery past the retention, a batch at a time, then the event bodies no
   * delivery uses any more; says how many deliveries.
   */
  async prune(): Promise<number> {
    const { deliveries, retentionDays, batchSize = 1_000 } = this.options;
    const total = await inBatches((size) => deliveries.pruneFinished(retentionDays, size), batchSize);
    if (total > 0) pruned.add(total);
    let next: BodyCursor | undefined;
    do next = (await deliveries.pruneBodies(retentionDays, batchSize, next)).next;
    while (next);
    return total;
  }
}
