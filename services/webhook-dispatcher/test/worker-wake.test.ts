import { randomUUID } from 'node:crypto';
import type { Pool } from '@inbox/db';
import { SecretBox } from '@inbox/service-kit';
import { waitFor } from '@inbox/testkit';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { DeliveryStore } from '../src/store/deliveries.js';
import { EndpointStore } from '../src/store/endpoints.js';
import { eventToSchedule, gate, loopbackWorker, migratedPool, type Receiver, receiver } from './support.js';

let pool: Pool;
let target: Receiver;

beforeAll(async () => {
  pool = await migratedPool();
  target = await receiver();
});
afterAll(async () => {
  await pool?.end();
  await target?.close();
});

/** The real store, whose first lease answers only once `held` opens: the worker is mid-lease until then. */
class HeldStore extends DeliveryStore {
  leases = 0;
  constructor(
    pool: Pool,
    private readonly held: { opened: Promise<void> },
  ) {
    super(pool);
  }
  override async lease(...args: Parameters<DeliveryStore['lease']>) {
    const leased = await super.lease(...args);
    if (this.leases++ === 0) await this.held.opened;
    return leased;
  }
}

it('answers a wake-up that came while it was leasing at once, not at the next poll nor after the gather', async () => {
  const workspaceId = randomUUID();
  const endpoints = new EndpointStore(pool, new SecretBox(SecretBox.generateKey()));
  await endpoints.create(workspaceId, { url: target.url, events: ['*'] });
  const held = gate();
  const deliveries = new HeldStore(pool, held);
  // Its poll and a wake-up's gather are far beyond the test's time: only leasing again at once delivers.
  const worker = loopbackWorker({ pool, deliveries, endpoints }, { wakeGatherMs: 600_000 });
  worker.start();
  try {
    await waitFor(() => deliveries.leases === 1, { what: 'the first lease under way' });
    // Scheduled and announced while that lease, which found nothing, has not answered yet.
    await deliveries.scheduleMany([eventToSchedule(workspaceId)]);
    worker.wake();
    held.open();
    await waitFor(() => target.hits.length === 1, { what: 'the delivery', timeoutMs: 5_000 });
    expect(deliveries.leases).toBeGreaterThanOrEqual(2);
  } finally {
    held.open();
    // Stopped while it leases again (it does after every attempt): the stop must not wait for the poll.
    await worker.stop();
  }
});

/** The real store, counting its leases and holding none. */
function countingStore(): HeldStore {
  const never = gate();
  never.open();
  return new HeldStore(pool, never);
}

it('after a lease that took less than it asked for, leases again only once something frees or comes due', async () => {
  const workspaceId = randomUUID();
  const endpoints = new EndpointStore(pool, new SecretBox(SecretBox.generateKey()));
  await endpoints.create(workspaceId, { url: target.url, events: ['*'] });
  const deliveries = countingStore();
  await deliveries.scheduleMany([1, 2, 3].map(() => eventToSchedule(workspaceId)));
  const before = target.hits.length;
  // The three results are recorded together however far apart their answers come (a slow machine spread
  // them past the default 5 ms once): each record that frees slots asks for a lease of its own.
  const worker = loopbackWorker({ pool, deliveries, endpoints }, { recordGatherMs: 5_000 });
  worker.start();
  try {
    await waitFor(() => target.hits.length === before + 3, {
      what: 'the three deliveries',
      timeoutMs: 5_000,
    });
    // The three recorded free their slots, which asks for one more lease; nothing else does.
    await waitFor(() => deliveries.leases === 2, { what: 'the lease after the record' });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(deliveries.leases).toBe(2);
  } finally {
    await worker.stop();
  }
});

it('stops at once while it gathers after a wake-up', async () => {
  const deliveries = countingStore();
  const endpoints = new EndpointStore(pool, new SecretBox(SecretBox.generateKey()));
  const worker = loopbackWorker({ pool, deliveries, endpoints }, { wakeGatherMs: 600_000 });
  worker.start();
  await waitFor(() => deliveries.leases === 1, { what: 'the first lease' });
  // Idle now, it waits for the poll; woken, it waits out the gather, which a stop must not.
  await new Promise((resolve) => setTimeout(resolve, 50));
  worker.wake();
  await worker.stop();
  expect(deliveries.leases).toBe(1);
});
