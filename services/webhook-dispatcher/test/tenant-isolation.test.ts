import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { NatsBus } from '@inbox/bus';
import { createPool, type Pool } from '@inbox/db';
import { createLogger, type HostedService, hostService, SecretBox } from '@inbox/service-kit';
import { createDatabase, uniquePrefix, waitFor } from '@inbox/testkit';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { dispatcherService } from '../src/index.js';
import {
  gate,
  type Hit,
  messageSent,
  migratedPool,
  type Receiver,
  receiptsById,
  receiver,
} from './support.js';

// Deliveries of every workspace share one worker loop and one batch write: these tests put one
// workspace's trouble in the same loop and batch as another's healthy deliveries.

let dispatcher: HostedService;
let bus: NatsBus;
let pool: Pool;
const receivers: Receiver[] = [];

const options = {
  allowedCidrs: '127.0.0.0/8',
  timeoutMs: 3_000,
  retrySchedule: '1,1,1',
  pollMs: 50,
  // Every delivery of a test is in flight at once, so the gated answers all land in one batch.
  perEndpointConcurrency: 32,
};

beforeAll(async () => {
  const { natsUrl, postgresAdminUrl } = inject('infra');
  const prefix = uniquePrefix();
  const databaseUrl = await createDatabase(postgresAdminUrl);
  dispatcher = await hostService(dispatcherService({ encryptionKey: SecretBox.generateKey(), ...options }), {
    databaseUrl,
    busUrl: natsUrl,
    busPrefix: prefix,
    port: 0,
    host: '127.0.0.1',
    logLevel: process.env.TEST_LOG_LEVEL ?? 'silent',
  });
  bus = await NatsBus.connect({ url: natsUrl, prefix });
  pool = createPool({ url: databaseUrl, schema: 'dispatcher' });
});
afterAll(async () => {
  await bus?.drain();
  await dispatcher?.stop();
  await pool?.end();
  await Promise.all(receivers.map((r) => r.close()));
});

async function newReceiver(answer: (hit: Hit, res: ServerResponse) => void) {
  const r = await receiver(answer);
  receivers.push(r);
  return r;
}

/** A receiver that answers 200 with `body` (raw bytes), once `held` opens. */
function answersAfter(held: { opened: Promise<void> }, body: string | Buffer) {
  return newReceiver((_hit, res) => void held.opened.then(() => res.end(body)));
}

const endpoint = (workspace: string, target: Receiver, secret?: string) =>
  bus.request('cmd.dispatcher.create-webhook', {
    workspace_id: workspace,
    url: target.url,
    events: ['*'],
    secret,
  });

const deliveriesOf = (workspace: string, webhookId: string) =>
  bus.request('cmd.dispatcher.list-deliveries', {
    workspace_id: workspace,
    webhook_id: webhookId,
    limit: 100,
  });

async function publishMany(workspace: string, count: number) {
  for (let i = 0; i < count; i++) await bus.publish(messageSent(workspace));
}

async function allDelivered(workspace: string, webhookId: string, count: number) {
  return waitFor(
    async () => {
      const { deliveries } = await deliveriesOf(workspace, webhookId);
      return deliveries.length === count && deliveries.every((d) => d.status === 'delivered') && deliveries;
    },
    { what: `${count} deliveries recorded as delivered` },
  );
}

function expectEachOnce(target: Receiver, count: number) {
  const receipts = receiptsById(target);
  expect(receipts.size).toBe(count);
  expect([...receipts.values()].every((n) => n === 1)).toBe(true);
}

describe('one workspace cannot make another repeat or lose deliveries', () => {
  it('stores a receiver answer with NUL or invalid UTF-8 and records its batch mates once', async () => {
    const [a, b] = [randomUUID(), randomUUID()];
    const held = gate();
    const nul = await answersAfter(held, Buffer.from('ok\0', 'latin1'));
    const invalid = await answersAfter(held, Buffer.from([0x6f, 0x6b, 0xff, 0xfe]));
    const normal = await answersAfter(held, 'ok');
    const nulHook = await endpoint(a, nul);
    const invalidHook = await endpoint(a, invalid);
    const normalHook = await endpoint(b, normal);
    await bus.publish(messageSent(a));
    await publishMany(b, 20);
    await waitFor(() => nul.hits.length === 1 && invalid.hits.length === 1 && normal.hits.length === 20, {
      what: 'every delivery in flight',
    });
    held.open();

    const delivered = await allDelivered(b, normalHook.id, 20);
    expectEachOnce(normal, 20);
    for (const delivery of delivered) {
      const detail = await bus.request('cmd.dispatcher.get-delivery', {
        workspace_id: b,
        webhook_id: normalHook.id,
        delivery_id: delivery.id,
      });
      expect(detail.attempts.map((attempt) => [attempt.status_code, attempt.response_body])).toEqual([
        [200, 'ok'],
      ]);
    }
    for (const [hook, body] of [
      [nulHook, 'ok\uFFFD'],
      [invalidHook, 'ok\uFFFD\uFFFD'],
    ] as const) {
      const [delivery] = await allDelivered(a, hook.id, 1);
      const detail = await bus.request('cmd.dispatcher.get-delivery', {
        workspace_id: a,
        webhook_id: hook.id,
        delivery_id: delivery!.id,
      });
      expect(detail.attempts.map((attempt) => [attempt.status_code, attempt.response_body])).toEqual([
        [200, body],
      ]);
    }
  });

  it('records the rest of a batch one by one when one row cannot be written at all', async () => {
    // A row Postgres refuses whatever we do: the batch fails, and only that row may stay unrecorded.
    await pool.query(`
      create or replace function refuse_attempt() returns trigger language plpgsql as
        $$ begin raise exception 'refused by the test'; end $$;
      create trigger refuse_unrecordable before insert on attempts for each row
        when (new.response_body = 'unrecordable') execute function refuse_attempt();`);
    try {
      const [a, b] = [randomUUID(), randomUUID()];
      const held = gate();
      const refused = await answersAfter(held, 'unrecordable');
      const normal = await answersAfter(held, 'ok');
      const refusedHook = await endpoint(a, refused);
      const normalHook = await endpoint(b, normal);
      await bus.publish(messageSent(a));
      await publishMany(b, 5);
      await waitFor(() => refused.hits.length === 1 && normal.hits.length === 5, {
        what: 'every delivery in flight',
      });
      held.open();
      await allDelivered(b, normalHook.id, 5);
      expectEachOnce(normal, 5);
      // Left to its lease expiry: still pending, with no attempt recorded.
      const [stuck] = (await deliveriesOf(a, refusedHook.id)).deliveries;
      expect(stuck).toMatchObject({ status: 'pending', last_error: null });
      await bus.request('cmd.dispatcher.delete-webhook', { workspace_id: a, webhook_id: refusedHook.id });
    } finally {
      await pool.query('drop trigger refuse_unrecordable on attempts; drop function refuse_attempt()');
    }
  });

  it('records a batch whose mate lost its endpoint while the attempt was in flight', async () => {
    const [a, b] = [randomUUID(), randomUUID()];
    const held = gate();
    const deleted = await answersAfter(held, 'ok');
    const normal = await answersAfter(held, 'ok');
    const deletedHook = await endpoint(a, deleted);
    const normalHook = await endpoint(b, normal);
    await bus.publish(messageSent(a));
    await publishMany(b, 5);
    await waitFor(() => deleted.hits.length === 1 && normal.hits.length === 5, {
      what: 'every delivery in flight',
    });
    await bus.request('cmd.dispatcher.delete-webhook', { workspace_id: a, webhook_id: deletedHook.id });
    held.open();
    await allDelivered(b, normalHook.id, 5);
    expectEachOnce(normal, 5);
  });
});

describe('the delivery worker survives any single error', () => {
  it('fails only the deliveries of an endpoint whose secret does not open, and stays ready', async () => {
    const [a, b] = [randomUUID(), randomUUID()];
    const corrupted = await newReceiver((_hit, res) => res.end('ok'));
    const healthy = await newReceiver((_hit, res) => res.end('ok'));
    const corruptedHook = await endpoint(a, corrupted, 'a-secret');
    const healthyHook = await endpoint(b, healthy, 'b-secret');
    await pool.query("update endpoints set secret_sealed = 'garbage' where id = $1", [corruptedHook.id]);
    await publishMany(a, 2);
    await publishMany(b, 2);
    await allDelivered(b, healthyHook.id, 2);
    const failed = await waitFor(
      async () => {
        const { deliveries } = await deliveriesOf(a, corruptedHook.id);
        return deliveries.length === 2 && deliveries.every((d) => d.status === 'failed') && deliveries;
      },
      { what: 'the corrupted endpoint’s deliveries to fail' },
    );
    expect(failed.map((d) => d.last_error)).toEqual([
      'secret cannot be decrypted',
      'secret cannot be decrypted',
    ]);
    expect(corrupted.hits).toHaveLength(0);

    // The loop goes on: a later event is delivered, and the service still says it is ready.
    await publishMany(b, 1);
    await allDelivered(b, healthyHook.id, 3);
    const readyz = await fetch(`${dispatcher.http.url}/readyz`);
    expect(readyz.status).toBe(200);
    expect(await readyz.json()).toMatchObject({ checks: { deliveryWorker: true } });
    const metrics = await (await fetch(`${dispatcher.http.url}/metrics`)).text();
    expect(metrics).toMatch(/webhook_worker_errors_total\{step="secret"\S* [1-9]/);
  });

  it('reports not ready once its loop can no longer complete an iteration, and once stopped', async () => {
    const { natsUrl } = inject('infra');
    const ownPool = await migratedPool();
    const ownBus = await NatsBus.connect({ url: natsUrl, prefix: uniquePrefix() });
    const engine = await dispatcherService({
      encryptionKey: SecretBox.generateKey(),
      ...options,
      stalledAfterMs: 1_000,
    }).create({
      pool: ownPool,
      bus: ownBus,
      logger: createLogger('webhook-dispatcher', { level: 'silent' }),
    });
    const workerReady = () => engine.readiness!.deliveryWorker!();
    await engine.start();
    try {
      expect(await workerReady()).toBe(true);
      // Every query fails from now on: the loop goes on, but completes no iteration.
      await ownPool.end();
      await waitFor(async () => !(await workerReady()), { what: 'not ready', timeoutMs: 5_000 });
    } finally {
      await ownBus.drain(() => engine.stop());
    }
    expect(await workerReady()).toBe(false);
  });
});
