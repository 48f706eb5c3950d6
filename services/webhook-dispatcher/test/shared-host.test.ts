import { randomUUID } from 'node:crypto';
import type { Pool } from '@inbox/db';
import { SecretBox } from '@inbox/service-kit';
import { waitFor } from '@inbox/testkit';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { DeliveryStore } from '../src/store/deliveries.js';
import { EndpointStore } from '../src/store/endpoints.js';
import { eventToSchedule, gate, loopbackWorker, migratedPool, receiver } from './support.js';

let pool: Pool;

beforeAll(async () => {
  pool = await migratedPool();
});
afterAll(async () => {
  await pool?.end();
});

/**
 * One receiver host, as an automation service's is for many customers: a slow workspace's `slowEndpoints`
 * under /slow never answer until the end, another workspace's one under /fast answers at once. The slow
 * workspace's `events` go first; once `slowUnderWay` of its attempts are under way, the other
 * workspace's one event must be delivered, and no more of the slow one's started.
 */
async function slowBesideFast(
  { slowEndpoints, events, slowUnderWay }: { slowEndpoints: number; events: number; slowUnderWay: number },
  worker: { concurrency: number; perEndpointConcurrency: number },
) {
  const held = gate();
  const host = await receiver((hit, res) => {
    if (hit.path.startsWith('/slow')) void held.opened.then(() => res.end('late'));
    else res.end('ok');
  });
  const at = (path: string) => host.url.replace(/\/hook$/, path);
  const endpoints = new EndpointStore(pool, new SecretBox(SecretBox.generateKey()));
  const deliveries = new DeliveryStore(pool);
  const slowWorkspace = randomUUID();
  const otherWorkspace = randomUUID();
  for (let i = 0; i < slowEndpoints; i++)
    await endpoints.create(slowWorkspace, { url: at(`/slow/${i}`), events: ['*'] });
  await endpoints.create(otherWorkspace, { url: at('/fast'), events: ['*'] });
  // A deadline far beyond the test's time: the other workspace's delivery must not wait for it.
  const running = loopbackWorker({ pool, deliveries, endpoints }, { timeoutMs: 120_000, ...worker });
  running.start();
  try {
    await deliveries.scheduleMany(Array.from({ length: events }, () => eventToSchedule(slowWorkspace)));
    running.wake();
    const slowHits = () => host.hits.filter((hit) => hit.path.startsWith('/slow')).length;
    await waitFor(() => slowHits() === slowUnderWay, { what: "the slow workspace's attempts under way" });

    await deliveries.scheduleMany([eventToSchedule(otherWorkspace)]);
    running.wake();
    await waitFor(() => host.hits.some((hit) => hit.path.startsWith('/fast')), {
      what: "the other workspace's delivery",
      timeoutMs: 10_000,
    });
    expect(slowHits()).toBe(slowUnderWay);
  } finally {
    held.open();
    await running.stop();
    await host.close();
  }
}

it("one workspace's slow endpoint on a shared receiver host holds back no other workspace's", () =>
  slowBesideFast(
    { slowEndpoints: 1, events: 8, slowUnderWay: 8 },
    { concurrency: 16, perEndpointConcurrency: 8 },
  ));

// Enough endpoints, each within its own cap, to take every slot of the worker: the workspace gets half
// of its sixteen slots, though its endpoints had room for thirty-two.
it("one workspace's many slow endpoints hold no more than its share of the worker's slots", () =>
  slowBesideFast(
    { slowEndpoints: 8, events: 6, slowUnderWay: 8 },
    { concurrency: 16, perEndpointConcurrency: 4 },
  ));

// An endpoint's cap over the worker's concurrency: its workspace still gets half of the slots.
it("one workspace's endpoint with a cap over the worker's slots holds no more than half of them", () =>
  slowBesideFast(
    { slowEndpoints: 1, events: 12, slowUnderWay: 8 },
    { concurrency: 16, perEndpointConcurrency: 32 },
  ));
