import { randomUUID } from 'node:crypto';
import type { Bus } from '@inbox/bus';
import type { EventEnvelope } from '@inbox/contracts';
import { captureContext, meter, withCapturedContext } from '@inbox/telemetry';
import type pg from 'pg';
import type { Queryable } from './pool.js';

export interface NewEvent<D> {
  type: string;
  workspace_id: string;
  data: D;
}

/**
 * Records an event in the outbox, inside the caller's transaction, so it exists if and only if the state
 * change it announces was committed. The relay publishes it afterwards.
 */
export async function writeEvent<D>(client: Queryable, event: NewEvent<D>): Promise<EventEnvelope<D>> {
  const envelope: EventEnvelope<D> = {
    id: randomUUID(),
    type: event.type,
    workspace_id: event.workspace_id,
    occurred_at: new Date().toISOString(),
    data: event.data,
  };
  await client.query(
    'insert into outbox (id, type, workspace_id, occurred_at, data, trace_context) values ($1, $2, $3, $4, $5, $6)',
    [
      envelope.id,
      envelope.type,
      envelope.workspace_id,
      envelope.occurred_at,
      envelope.data,
      captureContext(),
    ],
  );
  return envelope;
}

const publishLag = meter('outbox').createHistogram('outbox.publish.lag', {
  description: 'Time from an event being committed to the outbox to its publication on the stream',
  unit: 's',
});
const backlogs = new Map<string, number>();
meter('outbox')
  .createObservableGauge('outbox.backlog', { description: 'Outbox rows not yet published, by schema' })
  .addCallback((result) => {
    for (const [schema, rows] of backlogs) result.observe(rows, { schema });
  });

interface OutboxRow {
  seq: number;
  id: string;
  type: string;
  workspace_id: string;
  occurred_at: Date;
  data: unknown;
  trace_context: Record<string, string> | null;
}

export interface OutboxRelayOptions {
  pool: pg.Pool;
  bus: Bus;
  /** Names the advisory lock, so one replica per schema relays at a time and order is kept. */
  schema: string;
  batchSize?: number;
  /** How often to look for rows written by other replicas of the service; local writes wake it at once. */
  pollIntervalMs?: number;
  onError?: (error: unknown) => void;
  /** Test seam: called after each publish, before the row is marked. */
  afterPublish?: (event: EventEnvelope) => void;
}

/**
 * Publishes outbox rows in the order they were written, with the event id as the message id, and marks
 * them. A crash between publish and mark republishes the same id, which the stream de-duplicates.
 */
export class OutboxRelay {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = true;

  constructor(private readonly options: OutboxRelayOptions) {}

  private gauge: NodeJS.Timeout | undefined;

  start(): void {
    this.stopped = false;
    this.wake();
    this.gauge = setInterval(() => {
      this.backlog().then(
        (rows) => backlogs.set(this.options.schema, rows),
        () => undefined,
      );
    }, 15_000);
    this.gauge.unref();
  }

  /** Asks for a pass now, e.g. right after a transaction that wrote events commits. */
  wake(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    clearTimeout(this.timer);
    this.running = this.drainPending()
      .catch((error: unknown) => this.options.onError?.(error))
      .finally(() => {
        this.running = undefined;
        if (this.stopped) return;
        if (this.again) {
          this.again = false;
          this.wake();
        } else {
          this.timer = setTimeout(() => this.wake(), this.options.pollIntervalMs ?? 1_000);
          this.timer.unref();
        }
      });
  }

  /**
   * Finishes the pass under way, publishes what is still pending (call it while the bus is still open),
   * and stops. Rows it cannot publish stay for the next start or another replica.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    clearInterval(this.gauge);
    await this.running;
    await this.publishPending().catch((error: unknown) => this.options.onError?.(error));
  }

  private async drainPending(): Promise<void> {
    if (!this.stopped) await this.publishPending();
  }

  private async publishPending(): Promise<void> {
    while ((await this.relayBatch()) === (this.options.batchSize ?? 100)) {
      // A full batch suggests more rows are waiting.
    }
  }

  private async relayBatch(): Promise<number> {
    const { pool, bus, schema } = this.options;
    const client = await pool.connect();
    const published: number[] = [];
    try {
      await client.query('begin');
      const { rows: lock } = await client.query<{ locked: boolean }>(
        'select pg_try_advisory_xact_lock(hashtext($1)) as locked',
        [`outbox:${schema}`],
      );
      if (!lock[0]?.locked) {
        await client.query('rollback');
        return 0;
      }
      const { rows } = await client.query<OutboxRow>(
        `select seq, id, type, workspace_id, occurred_at, data, trace_context from outbox
          where published_at is null and txid < pg_snapshot_xmin(pg_current_snapshot())
          order by seq limit $1`,
        [this.options.batchSize ?? 100],
      );
      try {
        for (const row of rows) {
          const envelope: EventEnvelope = {
            id: row.id,
            type: row.type,
            workspace_id: row.workspace_id,
            occurred_at: row.occurred_at.toISOString(),
            data: row.data,
          };
          await withCapturedContext(row.trace_context, () => bus.publish(envelope));
          publishLag.record((Date.now() - row.occurred_at.getTime()) / 1000, { schema });
          this.options.afterPublish?.(envelope);
          published.push(row.seq);
        }
      } finally {
        // Whatever was published is marked even when a later publish fails, so it is not sent again.
        if (published.length > 0) {
          await client.query('update outbox set published_at = now() where seq = any($1)', [published]);
        }
        await client.query('commit');
      }
      return rows.length;
    } catch (error) {
      await client.query('rollback').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }

  /** Rows not yet published, for the backlog metric and readiness. */
  async backlog(): Promise<number> {
    const { rows } = await this.options.pool.query<{ n: number }>(
      'select count(*)::int as n from outbox where published_at is null',
    );
    return rows[0]?.n ?? 0;
  }
}
