import { randomUUID } from 'node:crypto';
import type { Pool } from '@inbox/db';
import { createLogger } from '@inbox/service-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DispatcherConfig } from '../src/config.js';
import { DeliveryPruner } from '../src/delivery-pruner.js';
import { type AttemptResult, DeliveryStore, type LeasedDelivery } from '../src/store/deliveries.js';
import { migratedPool } from './support.js';

let pool: Pool;
let deliveries: DeliveryStore;
const logger = createLogger('webhook-dispatcher', { level: 'silent' });

beforeAll(async () => {
  pool = await migratedPool();
  deliveries = new DeliveryStore(pool);
});
afterAll(async () => {
  await pool?.end();
});

/** An endpoint of a new workspace, to which deliveries are added in any state, finished any days ago. */
async function endpointWithDeliveries() {
  const workspaceId = randomUUID();
  const endpointId = randomUUID();
  await pool.query(
    `insert into endpoints (id, workspace_id, url, events) values ($1, $2, 'https://x.test/h', '{*}')`,
    [endpointId, workspaceId],
  );
  const add = async (
    status: 'pending' | 'sending' | 'delivered' | 'failed',
    finishedDaysAgo: number | null,
  ) => {
    const id = randomUUID();
    // Created long ago, whatever their state: only the time they finished counts.
    await pool.query(
      `insert into deliveries (id, workspace_id, endpoint_id, event_id, event_type, body, status, created_at, next_attempt_at, finished_at)
       values ($1, $2, $3, $4, 'message.sent', '{}', $5, now() - interval '90 days', now(), now() - $6 * interval '1 day')`,
      [id, workspaceId, endpointId, randomUUID(), status, finishedDaysAgo],
    );
    for (const attempt of [1, 2]) {
      await pool.query(
        `insert into attempts (workspace_id, delivery_id, attempt, at, status_code, duration_ms)
         values ($1, $2, $3, now() - interval '90 days', 500, 10)`,
        [workspaceId, id, attempt],
      );
    }
    return id;
  };
  const left = async () =>
    (
      await pool.query<{ id: string; attempts: number }>(
        `select d.id, (select count(*)::int from attempts a where a.delivery_id = d.id) as attempts
           from deliveries d where d.endpoint_id = $1`,
        [endpointId],
      )
    ).rows;
  const orphanAttempts = async () =>
    (
      await pool.query<{ n: number }>(
        'select count(*)::int as n from attempts a where a.workspace_id = $1 and not exists (select 1 from deliveries d where d.id = a.delivery_id)',
        [workspaceId],
      )
    ).rows[0]!.n;
  return { workspaceId, endpointId, add, left, orphanAttempts };
}

describe('webhook delivery retention', () => {
  it('keeps finished deliveries 30 days by default, and takes another number of days', () => {
    const required = {
      DATABASE_URL: 'postgres://inbox:secret@postgres:5432/inbox',
      BUS_URL: 'nats://nats:4222',
      ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64'),
    };
    expect(DispatcherConfig.parse(required).WEBHOOK_RETENTION_DAYS).toBe(30);
    expect(DispatcherConfig.parse({ ...required, WEBHOOK_RETENTION_DAYS: '7' }).WEBHOOK_RETENTION_DAYS).toBe(
      7,
    );
    expect(DispatcherConfig.safeParse({ ...required, WEBHOOK_RETENTION_DAYS: '0' }).success).toBe(false);
  });

  it('deletes only finished deliveries past the retention, with their attempts, a batch per statement', async () => {
    const world = await endpointWithDeliveries();
    const oldDelivered = [await world.add('delivered', 31), await world.add('delivered', 45)];
    const oldFailed = [
      await world.add('failed', 31),
      await world.add('failed', 60),
      await world.add('failed', 400),
    ];
    const recentDelivered = await world.add('delivered', 29);
    const recentFailed = await world.add('failed', 1);
    // Never finished, however old: a retry due later, and one being attempted this moment.
    const pending = await world.add('pending', null);
    const sending = await world.add('sending', null);

    // One statement takes at most its batch.
    expect(await deliveries.pruneFinished(30, 2)).toBe(2);
    const pruner = new DeliveryPruner({ deliveries, logger, retentionDays: 30, batchSize: 2 });
    // The rest, two statements' worth and a last short one.
    expect(await pruner.prune()).toBe(3);
    expect(await pruner.prune()).toBe(0);

    const left = await world.left();
    expect(left.map((d) => d.id).sort()).toEqual([recentDelivered, recentFailed, pending, sending].sort());
    expect(left.every((d) => d.attempts === 2)).toBe(true);
    expect(await world.orphanAttempts()).toBe(0);
    const gone = await pool.query('select 1 from attempts where delivery_id = any($1)', [
      [...oldDelivered, ...oldFailed],
    ]);
    expect(gone.rowCount).toBe(0);
  });

  it('counts a delivery from when it finished, and not at all once a resend makes it pending again', async () => {
    const world = await endpointWithDeliveries();
    const id = await world.add('sending', null);
    // As its third lease left it.
    await pool.query('update deliveries set attempts = 3 where id = $1', [id]);
    const leased: LeasedDelivery = {
      id,
      workspace_id: world.workspaceId,
      endpoint_id: world.endpointId,
      event_id: randomUUID(),
      event_type: 'message.sent',
      body: '{}',
      attempts: 3,
      trace_context: null,
    };
    const finishedAt = new Date(Date.now() - 31 * 86_400_000);
    const result: AttemptResult = {
      delivery: leased,
      statusCode: 500,
      error: null,
      durationMs: 10,
      responseBody: null,
      at: finishedAt,
      status: 'failed',
      nextAttemptAt: null,
    };
    await deliveries.record(pool, [result], 120 * 3_600_000);
    const finished = await pool.query<{ finished_at: Date }>(
      'select finished_at from deliveries where id = $1',
      [id],
    );
    expect(finished.rows[0]!.finished_at.getTime()).toBe(finishedAt.getTime());

    // Resent by an operator: pending again, out of the pruner's reach until it finishes anew.
    expect(await deliveries.resend(world.workspaceId, world.endpointId, id)).toBe(true);
    await new DeliveryPruner({ deliveries, logger, retentionDays: 30 }).prune();
    expect((await world.left()).map((d) => d.id)).toEqual([id]);

    // Attempted again and failed for good: it counts from that attempt (dated past the retention here).
    await pool.query(`update deliveries set status = 'sending', attempts = 4 where id = $1`, [id]);
    await deliveries.record(pool, [{ ...result, delivery: { ...leased, attempts: 4 } }], 120 * 3_600_000);
    await new DeliveryPruner({ deliveries, logger, retentionDays: 30 }).prune();
    expect(await world.left()).toEqual([]);
  });
});

describe("an event's body", () => {
  /** A workspace with three endpoints taking every event, and one event scheduled by `store`. */
  async function scheduledToThree(store: DeliveryStore) {
    const workspaceId = randomUUID();
    const endpoints = [randomUUID(), randomUUID(), randomUUID()];
    for (const id of endpoints)
      await pool.query(
        `insert into endpoints (id, workspace_id, url, events) values ($1, $2, 'https://x.test/h', '{*}')`,
        [id, workspaceId],
      );
    const eventId = randomUUID();
    const body = JSON.stringify({ text: '長'.repeat(16_384) });
    expect(
      await store.scheduleMany([
        { workspaceId, eventId, eventType: 'message.received', body, ordering: null, traceContext: {} },
      ]),
    ).toEqual([3]);
    const stored = await pool.query<{ body: string }>(
      'select body from event_bodies where workspace_id = $1 and event_id = $2',
      [workspaceId, eventId],
    );
    expect(stored.rows).toEqual([{ body }]);
    const copies = await pool.query<{ body: string | null }>(
      'select body from deliveries where event_id = $1',
      [eventId],
    );
    return { workspaceId, endpoints, eventId, body, copies: copies.rows.map((row) => row.body) };
  }

  it('is kept in each delivery too when told, as the releases before event bodies read it', async () => {
    const { body, copies } = await scheduledToThree(new DeliveryStore(pool, 'each'));
    expect(copies).toEqual([body, body, body]);
  });

  it('is stored once for all its endpoints with no copies by default, and pruned with the last of its deliveries', async () => {
    const { eventId, endpoints, copies } = await scheduledToThree(deliveries);
    expect(copies).toEqual([null, null, null]);

    // Past the retention: kept while any delivery of the event is left, however finished the others.
    await pool.query(`update event_bodies set created_at = now() - interval '40 days' where event_id = $1`, [
      eventId,
    ]);
    await pool.query(
      `update deliveries set status = 'delivered', finished_at = now() - interval '31 days'
        where event_id = $1 and endpoint_id <> $2`,
      [eventId, endpoints[0]],
    );
    const pruner = new DeliveryPruner({ deliveries, logger, retentionDays: 30 });
    expect(await pruner.prune()).toBeGreaterThanOrEqual(2);
    const bodies = async () =>
      (
        await pool.query<{ n: number }>('select count(*)::int as n from event_bodies where event_id = $1', [
          eventId,
        ])
      ).rows[0]!.n;
    expect(await bodies()).toBe(1);
    // The last delivery gone with its endpoint: the body goes at the next pruning.
    await pool.query('delete from endpoints where id = $1', [endpoints[0]]);
    await pruner.prune();
    expect(await bodies()).toBe(0);
  });

  it('passes over bodies still in use, in one pruning, to reach the unused ones behind them', async () => {
    const kept = await scheduledToThree(new DeliveryStore(pool, 'once'));
    const unused = await scheduledToThree(new DeliveryStore(pool, 'once'));
    // Both past the retention, the one in use the older; the other's deliveries all pruned.
    await pool.query(`update event_bodies set created_at = now() - interval '41 days' where event_id = $1`, [
      kept.eventId,
    ]);
    await pool.query(`update event_bodies set created_at = now() - interval '40 days' where event_id = $1`, [
      unused.eventId,
    ]);
    await pool.query('delete from deliveries where event_id = $1', [unused.eventId]);
    // A batch of one: the first holds the body still in use, and the pruning goes on past it.
    await new DeliveryPruner({ deliveries, logger, retentionDays: 30, batchSize: 1 }).prune();
    const left = await pool.query<{ event_id: string }>(
      'select event_id from event_bodies where event_id = any($1::uuid[])',
      [[kept.eventId, unused.eventId]],
    );
    expect(left.rows).toEqual([{ event_id: kept.eventId }]);
  });
});
