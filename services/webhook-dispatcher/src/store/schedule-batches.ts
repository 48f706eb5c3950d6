import type { DeliveryStore, EventToSchedule } from './deliveries.js';

/** The most events one scheduling statement takes. */
export const scheduleBatchSize = 64;

interface Waiting {
  event: EventToSchedule;
  resolve: (scheduled: number) => void;
  reject: (error: unknown) => void;
}

/**
 * Schedules events by group commit: the first event is written at once; events that arrive while a
 * statement runs wait for it to end and then go in the next one together (up to `maxBatch`). A quiet
 * stream costs what it did, one statement per event, and a busy one far fewer statements. Events of
 * every workspace share a batch, so a batch that fails is retried event by event: only the event at
 * fault is refused (and redelivered by the broker), never its neighbours.
 */
export class ScheduleBatches {
  private readonly waiting: Waiting[] = [];
  private writing = false;

  constructor(
    private readonly deliveries: DeliveryStore,
    private readonly maxBatch = scheduleBatchSize,
  ) {}

  /** How many deliveries the event got, once the statement that holds it has committed. */
  schedule(event: EventToSchedule): Promise<number> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ event, resolve, reject });
      if (!this.writing) void this.write();
    });
  }

  private async write(): Promise<void> {
    this.writing = true;
    try {
      while (this.waiting.length > 0) {
        const batch = this.waiting.splice(0, this.maxBatch);
        try {
          const scheduled = await this.deliveries.scheduleMany(batch.map((w) => w.event));
          for (const [i, w] of batch.entries()) w.resolve(scheduled[i]!);
        } catch (error) {
          if (batch.length === 1) batch[0]!.reject(error);
          else await this.oneByOne(batch);
        }
      }
    } finally {
      this.writing = false;
    }
  }

  private async oneByOne(batch: Waiting[]): Promise<void> {
    await Promise.all(batch.map((w) => this.deliveries.schedule(w.event).then(w.resolve, w.reject)));
  }
}
