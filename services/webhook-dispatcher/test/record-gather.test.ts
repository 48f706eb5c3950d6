import { randomUUID } from 'node:crypto';
import type { Pool } from '@inbox/db';
import { SecretBox } from '@inbox/service-kit';
import { waitFor } from '@inbox/testkit';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { DeliveryStore, type RecordedAttempt } from '../src/store/deliveries.js';
import { EndpointStore } from '../src/store/endpoints.js';
import { eventToSchedule, gate, loopbackWorker, migratedPool, type Receiver, receiver } from './support.js';

let pool: Pool;
let target: Receiver;
// The receiver answers the first POST at once and holds every later one until this opens.
const later = gate();

beforeAll(async () => {
  pool = await migratedPool();
  target = await receiver((_hit, res, index) => {
    if (index === 0) res.end('ok');
    else void later.opened.then(() => res.end('ok'));
  });
});
afterAll(async () => {
  later.open();
  await pool?.end();
  await target?.close();
});

/** The real store, noting which deliveries each recorded batch held. */
class NotingStore extends DeliveryStore {
  batches: string[][] = [];
  override async record(...args: Parameters<DeliveryStore['record']>) {
    const disabled = await super.record(...args);
    this.batches.push(args[1].map((result: RecordedAttempt) => result.delivery.event_id));
    return disabled;
  }
}

it('records a batch once every attempt under way has its result, without waiting out the gather', async () => {
  const workspaceId = randomUUID();
  const endpoints = new EndpointStore(pool, new SecretBox(SecretBox.generateKey()));
  await endpoints.create(workspaceId, { url: target.url, events: ['*'] });
  const deliveries = new NotingStore(pool);
  const [first, second] = [randomUUID(), randomUUID()];
  await deliveries.scheduleMany([
    eventToSchedule(workspaceId, { eventId: first }),
    eventToSchedule(workspaceId, { eventId: second }),
  ]);
  const worker = loopbackWorker(
    { pool, deliveries, endpoints },
    // Far beyond the test's time: only the last outstanding result can send the batch.
    { timeoutMs: 10_000, recordGatherMs: 600_000 },
  );
  worker.start();
  try {
    // Both leased together; the first answered, the second held at the receiver.
    await waitFor(() => target.hits.length === 2, { what: 'both attempts under way' });
    // The first result waits for the second, which is still under way: nothing is recorded yet.
    expect(deliveries.batches).toEqual([]);
    later.open();
    await waitFor(() => deliveries.batches.length === 1, { what: 'the batch recorded', timeoutMs: 5_000 });
    expect(new Set(deliveries.batches[0])).toEqual(new Set([first, second]));
    const { rows } = await pool.query<{ status: string }>(
      'select status from deliveries where workspace_id = $1',
      [workspaceId],
    );
    expect(rows.map((row) => row.status)).toEqual(['delivered', 'delivered']);
  } finally {
    later.open();
    await worker.stop();
  }
});
