import type { Queryable } from '@inbox/db';
import type { InboundBatch } from '../adapters/channel-adapter.js';

/** A kept callback a worker leased: its batch as read, and what its recording needs to know. */
export interface KeptCallback {
  id: string;
  workspaceId: string;
  integrationId: string;
  batch: InboundBatch;
  traceContext: Record<string, string> | null;
  /** Tries so far, this one included. */
  attempts: number;
  /** When it came: an integration's callbacks are recorded in this order. */
  receivedAt: Date;
  /** When it reached the inbox (later than it came when it was kept on the bus meanwhile). */
  keptAt: Date;
}

/** The kept callbacks not yet recorded, of every workspace. */
export interface KeptBacklog {
  callbacks: number;
  bytes: number;
  /** Since the oldest came; 0 when none is kept. */
  oldestAgeSeconds: number;
}

export interface LeaseOptions {
  /** Callbacks leased in one round, shared out among the workspaces that have any due. */
  round: number;
  /** Of one integration's, at most these, recorded in order by the worker that leased them. */
  perIntegration: number;
  /** How long the lease lasts: a worker that dies holding it leaves the callbacks to others then. */
  leaseMs: number;
  /** Workspaces whose callbacks this worker is recording already: none of theirs is leased. */
  busyWorkspaces?: readonly string[];
}

/**
 * The callbacks kept for the connector's workers to record (migration 017), and what each workspace's
 * weigh. Every statement is one round trip and holds no transaction open: the outbox relays publish only
 * what committed before the oldest transaction still running.
 */
export class CallbackInbox {
  constructor(private readonly db: Queryable) {}

  /**
   * Keeps a verified batch, unless the workspace's kept callbacks would weigh more than `maxBytes`: then
   * nothing is kept, and false says so. `receivedAt` when it came earlier than now (kept on the bus
   * meanwhile): an integration's callbacks are leased in the order they came.
   */
  async keep(
    workspaceId: string,
    integrationId: string,
    batch: InboundBatch,
    traceContext: Record<string, string>,
    maxBytes: number,
    receivedAt?: Date,
  ): Promise<boolean> {
    const text = JSON.stringify(batch);
    const bytes = Buffer.byteLength(text);
    // The usage row's update and the insert are one statement: two callbacks at once cannot both pass a
    // bound that has room for one.
    const { rowCount } = await this.db.query(
      `with room as (
         insert into callback_inbox_usage as usage (workspace_id, bytes, callbacks) values ($1, $3, 1)
         on conflict (workspace_id)
         do update set bytes = usage.bytes + excluded.bytes, callbacks = usage.callbacks + 1
          where usage.bytes + excluded.bytes <= $4
         returning 1)
       insert into callback_inbox (workspace_id, integration_id, batch, bytes, trace_context, received_at)
       select $1, $2, $5, $3, $6, coalesce($7, now()) from room`,
      [workspaceId, integrationId, bytes, maxBytes, text, traceContext, receivedAt ?? null],
    );
    return rowCount === 1;
  }

  /**
   * Leases the next round of due callbacks, at most `perIntegration` of each integration and none of an
   * integration whose callbacks another worker holds, in turns among workspaces: every workspace with
   * callbacks due gets its first in before any gets its second, so one workspace's backlog, however long,
   * delays only its own.
   */
  async lease({
    round,
    perIntegration,
    leaseMs,
    busyWorkspaces = [],
  }: LeaseOptions): Promise<KeptCallback[]> {
    const { rows } = await this.db.query<{
      id: string;
      workspace_id: string;
      integration_id: string;
      batch: string;
      trace_context: Record<string, string> | null;
      attempts: number;
      received_at: Date;
      kept_at: Date;
    }>(
      `with busy as (
         select distinct integration_id from callback_inbox where leased_until > now()
       ), due as (
         select id, workspace_id,
                row_number() over (partition by integration_id order by received_at, id) as place
           from callback_inbox
          where due_at <= now() and leased_until <= now()
            and integration_id not in (select integration_id from busy)
            and workspace_id <> all($4::uuid[])
       ), turns as (
         select id, row_number() over (partition by workspace_id order by place, id) as turn
           from due where place <= $2
       )
       update callback_inbox kept
          set leased_until = now() + $3 * interval '1 millisecond', attempts = kept.attempts + 1
         from (select id from turns order by turn, id limit $1) picked
        where kept.id = picked.id and kept.leased_until <= now()
       returning kept.id, kept.workspace_id, kept.integration_id, kept.batch, kept.trace_context,
                 kept.attempts, kept.received_at, kept.kept_at`,
      [round, perIntegration, leaseMs, busyWorkspaces],
    );
    return rows
      .map((row) => ({
        id: row.id,
        workspaceId: row.workspace_id,
        integrationId: row.integration_id,
        batch: revivedBatch(JSON.parse(row.batch)),
        traceContext: row.trace_context,
        attempts: row.attempts,
        receivedAt: row.received_at,
        keptAt: row.kept_at,
      }))
      .sort((a, b) => a.receivedAt.getTime() - b.receivedAt.getTime() || Number(BigInt(a.id) - BigInt(b.id)));
  }

  /** Forgets a callback recorded (or given up), and takes its weight off its workspace's. */
  async finish(id: string): Promise<void> {
    await this.db.query(
      `with gone as (delete from callback_inbox where id = $1 returning workspace_id, bytes)
       update callback_inbox_usage usage set bytes = usage.bytes - gone.bytes, callbacks = usage.callbacks - 1
         from gone where usage.workspace_id = gone.workspace_id`,
      [id],
    );
  }

  /** What every workspace's kept callbacks add up to, and how long the oldest has waited. */
  async backlog(): Promise<KeptBacklog> {
    const { rows } = await this.db.query<{ callbacks: string; bytes: string; oldest_age: number | null }>(
      `select coalesce(sum(callbacks), 0) as callbacks, coalesce(sum(bytes), 0) as bytes,
              (select extract(epoch from now() - min(received_at))::float8 from callback_inbox) as oldest_age
         from callback_inbox_usage`,
    );
    const row = rows[0]!;
    return {
      callbacks: Number(row.callbacks),
      bytes: Number(row.bytes),
      oldestAgeSeconds: row.oldest_age ?? 0,
    };
  }

  /** Gives a callback whose recording failed back, to be taken again in `delayMs`. */
  async postpone(id: string, delayMs: number): Promise<void> {
    await this.db.query(
      `update callback_inbox set due_at = now() + $2 * interval '1 millisecond', leased_until = '-infinity'
        where id = $1`,
      [id, delayMs],
    );
  }
}

/** A batch back from its JSON: its times were written as ISO strings. */
function revivedBatch(kept: InboundBatch): InboundBatch {
  return {
    ...kept,
    messages: kept.messages.map((message) => ({ ...message, sentAt: new Date(message.sentAt) })),
    statuses: kept.statuses.map((status) => (status.at ? { ...status, at: new Date(status.at) } : status)),
    ...(kept.watermarks
      ? { watermarks: kept.watermarks.map((watermark) => ({ ...watermark, upTo: new Date(watermark.upTo) })) }
      : {}),
    ...(kept.elsewhere
      ? { elsewhere: kept.elsewhere.map(({ account, batch }) => ({ account, batch: revivedBatch(batch) })) }
      : {}),
  };
}
