import { randomUUID } from 'node:crypto';
import type { Bus } from '@inbox/bus';
import {
  type EventData,
  type EventEnvelope,
  type EventType,
  orderingKeyOf,
  type WireEvent,
} from '@inbox/contracts';
import { captureContext, meter, outsideSpans, withCapturedContext } from '@inbox/telemetry';
import pg from 'pg';
import type { Queryable } from './pool.js';
import { classifyPublishFailure, PublishFailure } from './publish-failure.js';
import { storableText } from './storable-text.js';

/**
 * The largest event, serialized, that the outbox takes: a quarter of NATS's default 1 MiB max_payload,
 * so headers, a smaller broker limit or a later envelope field never push a written event over it.
 */
export const maxEventBytes = 256 * 1024;

/** An event over maxEventBytes: callers that carry outside input bound it before writing. */
export class EventTooLarge extends Error {
  override name = 'EventTooLarge';
  constructor(
    readonly eventType: EventType,
    readonly bytes: number,
  ) {
    super(`event ${eventType} is ${bytes} bytes serialized, over the outbox's bound of ${maxEventBytes}`);
  }
}

/**
 * Records an event in the outbox, inside the caller's transaction, so it exists if and only if the state
 * change it announces was committed. The relay publishes it afterwards. An event over maxEventBytes is
 * refused here, where the caller can still act on it, rather than by the broker, after the commit.
 *
 * The catalogue binds the data to the type at compile time; it is parsed where it is read (consumeEvents),
 * not here, so data a schema refuses (a provider's odd phone number) is dead-lettered at its consumer
 * rather than failing the writer's transaction (and a provider's callback, retried for ever).
 *
 * An event with an ordering key (orderingKeyOf) takes the key's next sequence number in the same
 * statement, so numbers and commits agree.
 */
export function writeEvent<T extends EventType>(
  client: Queryable,
  type: T,
  data: EventData<T>,
  along?: AlongStatement,
): Promise<EventEnvelope<T>> {
  return writePrepared(client, prepareEvent(type, data), along);
}

async function writePrepared<T extends EventType>(
  client: Queryable,
  { envelope, key, traceContext }: PreparedEvent<T>,
  along?: AlongStatement,
): Promise<EventEnvelope<T>> {
  // The statement written along comes first, with its own $1…$n; the event's parameters follow.
  const before = along?.values ?? [];
  const p = (n: number) => `$${before.length + n}`;
  const values = [
    ...before,
    envelope.id,
    envelope.type,
    envelope.workspace_id,
    envelope.occurred_at,
    envelope.data,
    traceContext,
  ];
  const columns = `${p(1)}, ${p(2)}, ${p(3)}, ${p(4)}, ${p(5)}, ${p(6)}`;
  const ctes = along ? [`along as (${along.text})`] : [];
  if (key === undefined) {
    const head = ctes.length > 0 ? `with ${ctes.join(', ')} ` : '';
    await client.query(
      `${head}insert into outbox (id, type, workspace_id, occurred_at, data, trace_context) values (${columns})`,
      values,
    );
    return envelope;
  }
  ctes.push(
    `next as (
       insert into event_sequences (ordering_key, seq) values (${p(7)}, 1)
       on conflict (ordering_key) do update set seq = event_sequences.seq + 1
       returning seq
     )`,
  );
  const { rows } = await client.query<{ seq: string }>(
    `with ${ctes.join(', ')}
     insert into outbox (id, type, workspace_id, occurred_at, data, trace_context, ordering_key, ordering_seq)
     select ${columns}, ${p(7)}, seq from next
     returning ordering_seq as seq`,
    [...values, key],
  );
  return { ...envelope, ordering: { key, seq: Number(rows[0]!.seq) } };
}

/**
 * A data-modifying statement (insert, update or delete, its parameters numbered from $1) run in the same
 * statement as the event's write: the state change and its event commit together in one round trip, with
 * no transaction to open and close around them. Postgres runs it whatever the rest of the statement reads.
 */
export interface AlongStatement {
  text: string;
  values: unknown[];
}

/**
 * An event made ready to write: its envelope, its ordering key, and the trace context it was made in.
 * Made where the change it announces is decided, so the trace it joins is that caller's even when a
 * statement of several callers writes it (writeEventsIfChanged).
 */
export interface PreparedEvent<T extends EventType = EventType> {
  envelope: EventEnvelope<T>;
  key: string | undefined;
  traceContext: Record<string, string>;
}

/** The event's envelope, ordering key and trace context; EventTooLarge past maxEventBytes. */
export function prepareEvent<T extends EventType>(type: T, data: EventData<T>): PreparedEvent<T> {
  const envelope = {
    id: randomUUID(),
    type,
    workspace_id: data.workspace_id,
    occurred_at: new Date().toISOString(),
    data,
  } as EventEnvelope<T>;
  const bytes = Buffer.byteLength(JSON.stringify(envelope));
  if (bytes > maxEventBytes) throw new EventTooLarge(type, bytes);
  return { envelope, key: orderingKeyOf(type, data), traceContext: captureContext() };
}

/**
 * Several state changes and their events in one statement: `along` changes the rows of a batch and
 * returns `n`, the 1-based position in `events` of each item whose row it changed; only those items'
 * events are written, each in the same commit as its change. A change that two writers may both attempt
 * (the second finds it made) announces itself once, by whichever made it.
 *
 * Events of one ordering key take consecutive numbers in the order of `events`: the key's row is raised
 * once, by their count, and a key's numbers still follow commit order with no gaps. Keys are raised in
 * their sorted order, so two such statements never wait on each other's keys in a cycle.
 *
 * Each item's written envelope, or undefined where its row was not changed.
 */
export async function writeEventsIfChanged(
  client: Queryable,
  events: readonly PreparedEvent[],
  along: AlongStatement,
): Promise<Array<EventEnvelope | undefined>> {
  const p = (n: number) => `$${along.values.length + n}`;
  const column = <K>(pick: (event: PreparedEvent) => K) => events.map(pick);
  const { rows } = await client.query<{ id: string; seq: string | null }>(
    `with along as (${along.text}),
       ev as (
         select * from unnest(${p(1)}::uuid[], ${p(2)}::text[], ${p(3)}::uuid[], ${p(4)}::timestamptz[],
                              ${p(5)}::jsonb[], ${p(6)}::jsonb[], ${p(7)}::text[])
           with ordinality as ev(id, type, workspace_id, occurred_at, data, trace_context, ordering_key, n)
          where ev.n in (select n from along)),
       counts as (
         select ordering_key, count(*) as taken from ev where ordering_key is not null
          group by ordering_key order by ordering_key),
       next as (
         insert into event_sequences (ordering_key, seq) select ordering_key, taken from counts
         on conflict (ordering_key) do update set seq = event_sequences.seq + excluded.seq
         returning ordering_key, seq)
     insert into outbox (id, type, workspace_id, occurred_at, data, trace_context, ordering_key, ordering_seq)
     select ev.id, ev.type, ev.workspace_id, ev.occurred_at, ev.data, ev.trace_context, ev.ordering_key,
            next.seq - count(*) over keyed + row_number() over (keyed order by ev.n)
       from ev left join next on next.ordering_key = ev.ordering_key
     window keyed as (partition by ev.ordering_key)
      order by ev.n
     returning id, ordering_seq as seq`,
    [
      ...along.values,
      column((e) => e.envelope.id),
      column((e) => e.envelope.type),
      column((e) => e.envelope.workspace_id),
      column((e) => e.envelope.occurred_at),
      column((e) => e.envelope.data),
      column((e) => e.traceContext),
      column((e) => e.key ?? null),
    ],
  );
  const written = new Map(rows.map((row) => [row.id, row.seq]));
  return events.map(({ envelope, key }) => {
    const seq = written.get(envelope.id);
    if (seq === undefined) return undefined;
    return key === undefined || seq === null
      ? envelope
      : { ...envelope, ordering: { key, seq: Number(seq) } };
  });
}

/** Events written in one statement, in their order (each ordering key's numbers too). */
export async function writeEvents(
  client: Queryable,
  events: readonly PreparedEvent[],
): Promise<EventEnvelope[]> {
  // One event, the most common batch, by the plainer statement Postgres plans and runs for less.
  if (events.length === 1) return [await writePrepared(client, events[0]!)];
  const written = await writeEventsIfChanged(client, events, {
    text: 'select generate_series(1, $1::int) as n',
    values: [events.length],
  });
  return written.filter((envelope) => envelope !== undefined);
}

const outboxMeter = meter('outbox');
const publishLag = outboxMeter.createHistogram('outbox.publish.lag', {
  description: 'Time from an event being committed to the outbox to its publication on the stream',
  unit: 's',
});
const deadLettered = outboxMeter.createCounter('outbox.dead_lettered', {
  description: 'Outbox rows set aside because the broker refuses them, by schema and reason',
});
const pruned = outboxMeter.createCounter('outbox.pruned', {
  description: 'Published outbox rows deleted once past their retention',
});
const backlogs = new Map<string, number>();
outboxMeter
  .createObservableGauge('outbox.backlog', {
    description: 'Outbox rows waiting to be published (dead-lettered ones excluded), by schema',
  })
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
  publish_attempts: number;
  ordering_key: string | null;
  ordering_seq: string | null;
}

/** The pino-style logger the relay raises its dead-letter alert through. */
export interface RelayLogger {
  error(fields: Record<string, unknown>, message: string): void;
}

export interface OutboxRelayOptions {
  pool: pg.Pool;
  bus: Bus;
  /** Names the advisory lock, so one replica per schema relays at a time and order is kept. */
  schema: string;
  batchSize?: number;
  /** How often to look for rows written by other replicas of the service; local writes wake it at once. */
  pollIntervalMs?: number;
  /**
   * Failed publishes of a row, for reasons other than an outage, after which the relay tries the rows
   * behind it: if one of them goes through, the broker is healthy and the row is set aside.
   */
  maxAttempts?: number;
  onError?: (error: unknown) => void;
  /** Where a dead-lettered row is reported; without it the report goes to onError. */
  logger?: RelayLogger;
  /**
   * How long a published row is kept (for an operator reading what was sent) before it is deleted;
   * 24 hours by default. Deleting is batched and runs beside the relay, never inside its pass.
   */
  retainPublishedMs?: number;
  /** How often published rows past their retention are looked for; 5 minutes by default. */
  pruneIntervalMs?: number;
  /** Rows one delete statement takes at most, so no statement holds many locks or runs long. */
  pruneBatchSize?: number;
  /**
   * Bytes of stored events one delete statement takes at most (past its first row); 4 MiB by default. An
   * event may be 256 KiB, stored as a hundred-odd out-of-line chunks each deleted with it: a thousand
   * such rows in one statement ran long, holding every outbox relay's fence with it.
   */
  pruneBatchBytes?: number;
  /** Test seam: called for each row whose publish went through, in order, before the batch is marked. */
  afterPublish?: (event: WireEvent) => void;
}

/** The event a row carries, as the bus publishes it. */
function wireEvent(row: OutboxRow): WireEvent {
  return {
    id: row.id,
    type: row.type,
    workspace_id: row.workspace_id,
    occurred_at: row.occurred_at.toISOString(),
    data: row.data,
    ...(row.ordering_key !== null && row.ordering_seq !== null
      ? { ordering: { key: row.ordering_key, seq: Number(row.ordering_seq) } }
      : {}),
  };
}

/** A row the relay set aside (failed_at set): reported once, never published unless an operator clears it. */
export class EventDeadLettered extends Error {
  override name = 'EventDeadLettered';
  constructor(
    readonly event: { id: string; type: string; workspace_id: string },
    readonly reason: 'refused' | 'repeated_failure',
    cause: unknown,
  ) {
    super(`outbox event ${event.id} (${event.type}) dead-lettered: ${reason}`, { cause });
  }
}

// How many failing rows one pass may skip while looking for a later row that goes through.
const maxSkippedPerPass = 3;

const errorText = (error: unknown) =>
  storableText(error instanceof Error ? error.message : String(error), 1000);

/**
 * Publishes outbox rows in the order they were written, with the event id as the message id, and marks
 * them. A crash between publish and mark republishes the same id, which the stream de-duplicates.
 *
 * A row the broker refuses (too large for it, or failing again and again while later rows go through)
 * would block every row behind it, of every workspace, for good; it is dead-lettered instead: failed_at
 * set, skipped from then on, reported as an error and counted. While the broker is unreachable nothing
 * is set aside: the pass stops and the same row is tried first next time. An operator republishes a
 * dead-lettered row by clearing its failed_at.
 */
export class OutboxRelay {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = true;

  // The pass's first round trip: the transaction and its lock.
  private readonly lock: string;

  constructor(private readonly options: OutboxRelayOptions) {
    this.lock = `begin; select pg_try_advisory_xact_lock(hashtext(${pg.escapeLiteral(`outbox:${options.schema}`)})) as locked`;
  }

  private gauge: NodeJS.Timeout | undefined;
  private pruner: NodeJS.Timeout | undefined;
  private pruning: Promise<unknown> | undefined;

  start(): void {
    this.stopped = false;
    this.wake();
    this.pruner = setInterval(
      () => {
        this.pruning ??= this.prunePublished()
          .catch((error: unknown) => this.options.onError?.(error))
          .finally(() => {
            this.pruning = undefined;
          });
      },
      this.options.pruneIntervalMs ?? 5 * 60_000,
    );
    this.pruner.unref();
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
    clearInterval(this.pruner);
    await Promise.all([this.running, this.pruning]);
    await this.publishPending().catch((error: unknown) => this.options.onError?.(error));
  }

  private async drainPending(): Promise<void> {
    if (!this.stopped) await this.publishPending();
  }

  private async publishPending(): Promise<void> {
    // Outside whatever request woke the relay: a batch serves many traces, and each row's publish joins
    // its own (the context stored with it), so the batch's statements belong to none of them.
    await outsideSpans(async () => {
      while ((await this.relayBatch()) === (this.options.batchSize ?? 100)) {
        // A full batch suggests more rows are waiting.
      }
    });
  }

  /**
   * One batch in three round trips: the transaction and its lock in one; the batch's rows; the publishes;
   * then the marks and the commit in one. Each round trip costs both processes more than these statements
   * do once they run (bench/RESULTS.md, thirtieth session), and a relay makes a batch for every turn of
   * its service that commits events. The rows are read by a prepared statement of their own, after the
   * lock's: so their plan is kept (a text of several statements goes by the simple protocol and is
   * planned on every run), and their snapshot is taken with the lock held (one taken before could miss
   * the marks of the replica that held the lock until then, and publish its rows again).
   */
  private async relayBatch(): Promise<number> {
    const { pool } = this.options;
    const client = await pool.connect();
    try {
      // Several statements in one text go by the simple protocol, which takes no parameters: the lock's
      // name is escaped into it.
      const [, lock] = (await client.query(this.lock)) as unknown as [
        pg.QueryResult,
        pg.QueryResult<{ locked: boolean }>,
      ];
      if (!lock.rows[0]?.locked) {
        await client.query('rollback');
        return 0;
      }
      const { rows } = await client.query<OutboxRow>(
        `select seq, id, type, workspace_id, occurred_at, data, trace_context, publish_attempts, ordering_key, ordering_seq
           from outbox
          where published_at is null and failed_at is null and txid < pg_snapshot_xmin(pg_current_snapshot())
          order by seq limit $1`,
        [this.options.batchSize ?? 100],
      );
      const { published, failure } = await this.publishRows(client, rows);
      // The seqs are the numbers the batch read back, so they go into the text as they are, and the
      // marks are planned for them each time. Prepared, the marks kept the generic plan a connection made
      // while the outbox was small: a scan of every row, published ones too (14,000 rows read past for 8
      // marks in a harness, 1.4 ms a batch against 0.13; bench/RESULTS.md, thirtieth session).
      await client.query(
        published.length > 0
          ? `update outbox set published_at = now() where seq = any('{${published.join(',')}}'::bigint[]); commit`
          : 'commit',
      );
      if (failure !== undefined) throw failure;
      return rows.length;
    } catch (error) {
      await client.query('rollback').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }

  /**
   * Publishes the rows, all at once, and settles them in order: answers the rows whose publish went
   * through, for the caller to mark in the batch's commit, and the failure that ended the pass early, if
   * one did.
   *
   * The whole batch is under way together: the broker gets it in a write or two and confirms it in as
   * few, where one publish after another cost a round trip each (bench/RESULTS.md, twelfth session). The
   * rows leave in order, and the broker keeps the order of one connection's publishes; only a publish
   * that fails while later ones of its batch go through lets those later ones into the stream ahead of
   * it (consumers order by the writer's sequence numbers, never by the stream: 0016). What is settled
   * here is what a pass one row at a time would settle: the rows up to the first failure that ends the
   * pass are marked, set aside or counted; the rows behind it count as not tried, stay pending, and are
   * published again next pass, where the stream drops them as duplicates of their event id.
   */
  private async publishRows(
    client: pg.PoolClient,
    rows: OutboxRow[],
  ): Promise<{ published: number[]; failure: unknown }> {
    const { bus, schema } = this.options;
    const maxAttempts = this.options.maxAttempts ?? 5;
    const envelopes = rows.map(wireEvent);
    // Async, so that a publish throwing at once is that row's failure like any other, not the batch's.
    const outcomes = await Promise.allSettled(
      rows.map(async (row, index) =>
        withCapturedContext(row.trace_context, () => bus.publish(envelopes[index]!)),
      ),
    );
    const published: number[] = [];
    // Rows that failed maxAttempts times, skipped until a later row shows whether the broker is healthy.
    let skipped: Array<{ row: OutboxRow; error: unknown }> = [];
    let failure: unknown;
    for (const [index, row] of rows.entries()) {
      const outcome = outcomes[index]!;
      if (outcome.status === 'rejected') {
        const error: unknown = outcome.reason;
        const kind = classifyPublishFailure(error, bus);
        const attempts = await this.recordFailure(client, row, error);
        if (kind === PublishFailure.refused) {
          await this.deadLetter(client, row, 'refused', error);
          continue;
        }
        if (
          kind === PublishFailure.unknown &&
          attempts >= maxAttempts &&
          skipped.length < maxSkippedPerPass
        ) {
          skipped.push({ row, error });
          continue;
        }
        failure = error;
        break;
      }
      publishLag.record((Date.now() - row.occurred_at.getTime()) / 1000, { schema });
      this.options.afterPublish?.(envelopes[index]!);
      published.push(row.seq);
      // A later row went through, so the broker is healthy: what it kept refusing is set aside.
      for (const { row: refused, error } of skipped) {
        await this.deadLetter(client, refused, 'repeated_failure', error);
      }
      skipped = [];
    }
    // Rows still skipped stay pending, in their place, and are tried first on the next pass.
    return { published, failure: failure ?? skipped[0]?.error };
  }

  private async recordFailure(client: pg.PoolClient, row: OutboxRow, error: unknown): Promise<number> {
    const { rows } = await client.query<{ publish_attempts: number }>(
      `update outbox set publish_attempts = publish_attempts + 1, publish_error = $2 where seq = $1
        returning publish_attempts`,
      [row.seq, errorText(error)],
    );
    return rows[0]?.publish_attempts ?? row.publish_attempts + 1;
  }

  private async deadLetter(
    client: pg.PoolClient,
    row: OutboxRow,
    reason: EventDeadLettered['reason'],
    error: unknown,
  ): Promise<void> {
    const { schema } = this.options;
    await client.query('update outbox set failed_at = now() where seq = $1', [row.seq]);
    deadLettered.add(1, { schema, reason });
    const event = { id: row.id, type: row.type, workspace_id: row.workspace_id };
    if (this.options.logger) {
      this.options.logger.error(
        {
          event_id: row.id,
          event_type: row.type,
          workspace_id: row.workspace_id,
          schema,
          reason,
          err: error,
        },
        'outbox event dead-lettered: the broker refuses it, later events go on without it',
      );
    } else {
      this.options.onError?.(new EventDeadLettered(event, reason, error));
    }
  }

  /**
   * Deletes published rows older than the retention, a batch per statement until none is left, and says
   * how many. Replicas may prune at once: each skips the rows another is deleting. Unpublished and
   * dead-lettered rows are never deleted.
   */
  async prunePublished(): Promise<number> {
    const {
      pool,
      schema,
      retainPublishedMs = 24 * 3_600_000,
      pruneBatchSize = 1_000,
      pruneBatchBytes = 4 * 2 ** 20,
    } = this.options;
    let total = 0;
    for (;;) {
      // Sizes as stored (pg_column_size reads a value's header, not its out-of-line chunks).
      const { rowCount } = await pool.query(
        `with candidates as (
           select seq, published_at, pg_column_size(data) + coalesce(pg_column_size(trace_context), 0) as bytes
             from outbox where published_at < now() - $1 * interval '1 millisecond'
            order by published_at limit $2 for update skip locked),
         taken as (
           select seq from (
             select seq, sum(bytes) over (order by published_at, seq) - bytes as before from candidates) c
            where before < $3)
         delete from outbox where seq in (select seq from taken)`,
        [retainPublishedMs, pruneBatchSize, pruneBatchBytes],
      );
      total += rowCount ?? 0;
      // A batch cut short by its bytes has more behind it; only an empty one ends the pass.
      if ((rowCount ?? 0) === 0) break;
    }
    if (total > 0) pruned.add(total, { schema });
    return total;
  }

  /** Rows waiting to be published (dead-lettered ones are not waiting), for the backlog metric and readiness. */
  async backlog(): Promise<number> {
    const { rows } = await this.options.pool.query<{ n: number }>(
      'select count(*)::int as n from outbox where published_at is null and failed_at is null',
    );
    return rows[0]?.n ?? 0;
  }
}
