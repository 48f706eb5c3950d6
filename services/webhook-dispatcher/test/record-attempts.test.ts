import { randomUUID } from 'node:crypto';
import type { Pool, Queryable } from '@inbox/db';
import { waitFor } from '@inbox/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DeliveryStore, type LeasedDelivery, type RecordedAttempt } from '../src/store/deliveries.js';
import { migratedPool } from './support.js';

let pool: Pool;
let deliveries: DeliveryStore;
const dayMs = 86_400_000;
const disableAfterMs = 5 * dayMs;

beforeAll(async () => {
  pool = await migratedPool();
  deliveries = new DeliveryStore(pool);
});
afterAll(async () => {
  await pool?.end();
});

/** An endpoint with one delivery being attempted ('sending'), as the worker leased it. */
async function leased(options: EndpointOptions = {}): Promise<LeasedDelivery> {
  const { workspaceId, endpointId } = await endpoint(pool, options);
  return sending(pool, workspaceId, endpointId);
}

interface EndpointOptions {
  failingForMs?: number;
  enabled?: boolean;
}

/** An endpoint of a workspace of its own. */
async function endpoint(db: Queryable, options: EndpointOptions = {}) {
  const workspaceId = randomUUID();
  const endpointId = randomUUID();
  await db.query(
    `insert into endpoints (id, workspace_id, url, events, enabled, failing_since)
     values ($1, $2, 'https://receiver.example/hook', '{*}', $3, $4)`,
    [
      endpointId,
      workspaceId,
      options.enabled ?? true,
      options.failingForMs === undefined ? null : new Date(Date.now() - options.failingForMs),
    ],
  );
  return { workspaceId, endpointId };
}

/** A delivery to an existing endpoint, being attempted. */
async function sending(db: Queryable, workspaceId: string, endpointId: string): Promise<LeasedDelivery> {
  const delivery: LeasedDelivery = {
    id: randomUUID(),
    workspace_id: workspaceId,
    endpoint_id: endpointId,
    event_id: randomUUID(),
    event_type: 'message.sent',
    body: '{}',
    attempts: 1,
    trace_context: null,
  };
  await db.query(
    `insert into deliveries (id, workspace_id, endpoint_id, event_id, event_type, body, ordering_seq, trace_context, status, next_attempt_at, attempts)
     values ($1, $2, $3, $4, 'message.sent', '{}', 0, '{}', 'sending', now(), 1)`,
    [delivery.id, workspaceId, endpointId, delivery.event_id],
  );
  return delivery;
}

const outcome = (
  delivery: LeasedDelivery,
  answer: { statusCode: number; status: RecordedAttempt['status']; endpointGone?: boolean },
): RecordedAttempt => ({
  delivery,
  statusCode: answer.statusCode,
  error: null,
  durationMs: 12,
  responseBody: answer.statusCode === 200 ? 'ok' : 'nope',
  at: new Date(),
  status: answer.status,
  nextAttemptAt: answer.status === 'pending' ? new Date(Date.now() + 60_000) : null,
  ...(answer.endpointGone ? { endpointGone: true } : {}),
});

async function endpointOf(delivery: LeasedDelivery) {
  const { rows } = await pool.query<{
    enabled: boolean;
    failing_since: Date | null;
    disabled_reason: string | null;
  }>('select enabled, failing_since, disabled_reason from endpoints where id = $1', [delivery.endpoint_id]);
  return rows[0]!;
}

async function deliveryOf(delivery: LeasedDelivery) {
  const { rows } = await pool.query<{ status: string; last_error: string | null; lease_until: Date | null }>(
    'select status, last_error, lease_until from deliveries where id = $1',
    [delivery.id],
  );
  const attempts = await pool.query<{ status_code: number; response_body: string }>(
    'select status_code, response_body from attempts where delivery_id = $1',
    [delivery.id],
  );
  return { ...rows[0]!, attempts: attempts.rows };
}

describe('recording a batch of attempts in one statement', () => {
  it("writes each attempt, its delivery's next state and its endpoint's failure clock, and reports what it disabled", async () => {
    const delivered = await leased({ failingForMs: dayMs });
    const retried = await leased();
    const stillFailing = await leased({ failingForMs: dayMs });
    const failedTooLong = await leased({ failingForMs: 6 * dayMs });
    const gone = await leased();
    const alreadyOff = await leased({ failingForMs: 6 * dayMs, enabled: false });

    const disabled = await deliveries.record(
      pool,
      [
        outcome(delivered, { statusCode: 200, status: 'delivered' }),
        outcome(retried, { statusCode: 500, status: 'pending' }),
        outcome(stillFailing, { statusCode: 503, status: 'pending' }),
        outcome(failedTooLong, { statusCode: 500, status: 'failed' }),
        outcome(gone, { statusCode: 410, status: 'failed', endpointGone: true }),
        outcome(alreadyOff, { statusCode: 500, status: 'failed' }),
      ],
      disableAfterMs,
    );

    expect(disabled.sort((a, b) => a.reason.localeCompare(b.reason))).toEqual([
      { id: failedTooLong.endpoint_id, workspace_id: failedTooLong.workspace_id, reason: 'failing' },
      { id: gone.endpoint_id, workspace_id: gone.workspace_id, reason: 'gone' },
    ]);

    expect(await deliveryOf(delivered)).toMatchObject({
      status: 'delivered',
      last_error: null,
      lease_until: null,
      attempts: [{ status_code: 200, response_body: 'ok' }],
    });
    expect(await deliveryOf(retried)).toMatchObject({ status: 'pending', last_error: 'HTTP 500' });
    expect(await deliveryOf(gone)).toMatchObject({ status: 'failed', attempts: [{ status_code: 410 }] });

    // A success stops the clock; a first failure starts it; a running one keeps its start.
    expect(await endpointOf(delivered)).toMatchObject({ enabled: true, failing_since: null });
    const started = await endpointOf(retried);
    expect(started.enabled).toBe(true);
    expect(Date.now() - started.failing_since!.getTime()).toBeLessThan(60_000);
    const kept = await endpointOf(stillFailing);
    expect(kept.enabled).toBe(true);
    expect(Date.now() - kept.failing_since!.getTime()).toBeGreaterThan(dayMs - 60_000);

    expect(await endpointOf(failedTooLong)).toMatchObject({
      enabled: false,
      disabled_reason: 'no successful delivery for 120 hours',
    });
    expect(await endpointOf(gone)).toMatchObject({
      enabled: false,
      disabled_reason: 'the receiver answered 410 Gone',
    });
    // Already off: left as the operator (or an earlier batch) left it, and not reported again.
    expect(await endpointOf(alreadyOff)).toMatchObject({ enabled: false, disabled_reason: null });
  });

  it('counts one success in a batch as the endpoint succeeding, and touches no other workspace', async () => {
    const first = await leased({ failingForMs: 6 * dayMs });
    const second: LeasedDelivery = { ...first, id: randomUUID(), event_id: randomUUID() };
    await pool.query(
      `insert into deliveries (id, workspace_id, endpoint_id, event_id, event_type, body, ordering_seq, trace_context, status, next_attempt_at, attempts)
       values ($1, $2, $3, $4, 'message.sent', '{}', 0, '{}', 'sending', now(), 1)`,
      [second.id, first.workspace_id, first.endpoint_id, second.event_id],
    );
    const disabled = await deliveries.record(
      pool,
      [
        outcome(first, { statusCode: 500, status: 'pending' }),
        outcome(second, { statusCode: 200, status: 'delivered' }),
      ],
      disableAfterMs,
    );
    expect(disabled).toEqual([]);
    expect(await endpointOf(first)).toMatchObject({ enabled: true, failing_since: null });

    // A result naming another workspace's endpoint and delivery changes neither.
    const other = await leased({ failingForMs: 6 * dayMs });
    const forged: LeasedDelivery = { ...other, workspace_id: randomUUID() };
    expect(
      await deliveries.record(pool, [outcome(forged, { statusCode: 500, status: 'failed' })], disableAfterMs),
    ).toEqual([]);
    expect(await endpointOf(other)).toMatchObject({ enabled: true });
    expect(await deliveryOf(other)).toMatchObject({ status: 'sending', attempts: [] });
  });

  it("lets an attempt that outlived its lease settle nothing while the delivery's next lease is in flight", async () => {
    const first = await leased();
    // Its lease ran out and another worker leased it again: one more attempt, a lease of its own.
    await pool.query(
      "update deliveries set attempts = 2, lease_until = now() + interval '1 minute' where id = $1",
      [first.id],
    );
    const late = outcome(first, { statusCode: 500, status: 'pending' });
    expect(await deliveries.record(pool, [late], disableAfterMs)).toEqual([]);

    const { rows } = await pool.query<{ status: string; attempts: number; lease_until: Date | null }>(
      'select status, attempts, lease_until from deliveries where id = $1',
      [first.id],
    );
    expect(rows[0]).toMatchObject({ status: 'sending', attempts: 2 });
    expect(rows[0]!.lease_until).not.toBeNull();
    // The late attempt happened and is in the log, but says nothing of the endpoint's health.
    expect((await deliveryOf(first)).attempts).toEqual([{ status_code: 500, response_body: 'nope' }]);
    expect((await endpointOf(first)).failing_since).toBeNull();

    // The current attempt settles it.
    const current = outcome({ ...first, attempts: 2 }, { statusCode: 200, status: 'delivered' });
    await deliveries.record(pool, [current], disableAfterMs);
    expect(await deliveryOf(first)).toMatchObject({ status: 'delivered', lease_until: null });
  });

  it("keeps an operator's re-enabling committed while the batch that would disable the endpoint ran", async () => {
    const failedTooLong = await leased({ failingForMs: 6 * dayMs });
    // The operator's PATCH (enabled: true clears the failure clock) holds the row when the batch starts.
    const operator = await pool.connect();
    try {
      await operator.query('begin');
      await operator.query('update endpoints set enabled = true, failing_since = null where id = $1', [
        failedTooLong.endpoint_id,
      ]);
      const recording = deliveries.record(
        pool,
        [outcome(failedTooLong, { statusCode: 500, status: 'pending' })],
        disableAfterMs,
      );
      await waitFor(
        async () =>
          (
            await pool.query(
              `select 1 from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`,
            )
          ).rowCount === 1,
        { what: "the batch waiting on the operator's row" },
      );
      await operator.query('commit');
      expect(await recording).toEqual([]);
    } finally {
      operator.release();
    }
    // Enabled, its failure clock started by this failure.
    const after = await endpointOf(failedTooLong);
    expect(after).toMatchObject({ enabled: true, disabled_reason: null });
    expect(Date.now() - after.failing_since!.getTime()).toBeLessThan(60_000);
  });

  it('locks the endpoints it changes in one order, so two batches changing the same ones never deadlock', async () => {
    // Two endpoints whose ids sort one way, and hash the other way.
    const first = { workspaceId: randomUUID(), endpointId: '00000000-0000-4000-8000-000000000001' };
    const last = { workspaceId: randomUUID(), endpointId: 'ffffffff-ffff-4fff-bfff-ffffffffffff' };
    for (const { workspaceId, endpointId } of [last, first])
      await pool.query(
        `insert into endpoints (id, workspace_id, url, events) values ($1, $2, 'https://receiver.example/hook', '{*}')`,
        [endpointId, workspaceId],
      );
    const failure = async (at: { workspaceId: string; endpointId: string }) =>
      outcome(await sending(pool, at.workspaceId, at.endpointId), { statusCode: 500, status: 'pending' });
    const [one, other] = [await pool.connect(), await pool.connect()];
    try {
      const otherPid = (await other.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid;
      await one.query('begin');
      await other.query('begin');
      // Planned as a batch big enough for hashing is: its endpoints come in the hash's order, not the ids'.
      await other.query('set local enable_sort = off');
      // A batch of one replica has started the first endpoint's failure clock and not yet committed.
      await deliveries.record(one, [await failure(first)], disableAfterMs);
      // Another replica's batch changes both, named last first: it waits for the first endpoint.
      const both = deliveries.record(other, [await failure(last), await failure(first)], disableAfterMs);
      await waitFor(
        async () =>
          (
            await pool.query(`select 1 from pg_stat_activity where pid = $1 and wait_event_type = 'Lock'`, [
              otherPid,
            ])
          ).rowCount === 1,
        { what: "the second batch waiting on the first endpoint's row" },
      );
      // The first replica's next batch changes the last endpoint: it must not find it locked.
      await deliveries.record(one, [await failure(last)], disableAfterMs);
      await one.query('commit');
      await both;
      await other.query('commit');
    } finally {
      one.release();
      other.release();
    }
    const { rows } = await pool.query<{ failing: boolean }>(
      'select failing_since is not null as failing from endpoints where id = any($1)',
      [[first.endpointId, last.endpointId]],
    );
    expect(rows).toEqual([{ failing: true }, { failing: true }]);
  });

  it('leaves an endpoint whose state does not change unwritten', async () => {
    const healthy = await leased();
    const failing = await leased({ failingForMs: dayMs });
    // xmin names the transaction that wrote the row's current version.
    const versions = async () =>
      (
        await pool.query<{ id: string; xmin: string }>(
          'select id, xmin from endpoints where id = any($1) order by id',
          [[healthy.endpoint_id, failing.endpoint_id]],
        )
      ).rows;
    const before = await versions();
    await deliveries.record(
      pool,
      [
        outcome(healthy, { statusCode: 200, status: 'delivered' }),
        outcome(failing, { statusCode: 500, status: 'pending' }),
      ],
      disableAfterMs,
    );
    expect(await versions()).toEqual(before);
    expect(await deliveryOf(healthy)).toMatchObject({ status: 'delivered' });
  });

  it('keeps one plan for small batches instead of planning each call', async () => {
    // A database of its own, so the statement's plans are this test's alone, with a table of some size,
    // as in service: on a handful of rows every plan costs about the same.
    const own = await migratedPool();
    const client = await own.connect();
    try {
      const { workspaceId, endpointId } = await endpoint(client);
      await client.query(
        `insert into deliveries (id, workspace_id, endpoint_id, event_id, event_type, body, ordering_seq, status)
         select gen_random_uuid(), $1, $2, gen_random_uuid(), 'message.sent', '{}', 0, 'delivered'
           from generate_series(1, 20000)`,
        [workspaceId, endpointId],
      );
      await client.query('analyze deliveries, endpoints, attempts');
      for (let call = 0; call < 8; call++) {
        const delivery = await sending(client, workspaceId, endpointId);
        await deliveries.record(
          client,
          [outcome(delivery, { statusCode: 200, status: 'delivered' })],
          disableAfterMs,
        );
      }
      // Postgres plans a prepared statement for its values five times, then keeps a generic plan unless
      // it looked dearer than those; the statement must not give it reason to.
      const { rows } = await client.query<{ generic_plans: string; custom_plans: string }>(
        `select generic_plans, custom_plans from pg_prepared_statements where statement like '%insert into attempts%'`,
      );
      expect(rows).toHaveLength(1);
      expect(Number(rows[0]!.custom_plans)).toBe(5);
      expect(Number(rows[0]!.generic_plans)).toBe(3);
    } finally {
      client.release();
      await own.end();
    }
  });
});
