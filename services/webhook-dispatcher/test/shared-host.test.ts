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

it("one workspace's slow endpoint on a shared receiver host holds back no other workspace's", async () => {
  const held = gate();
  // One host, as an automation service's is for many customers: /slow never answers until the end.
  const host = await receiver((hit, res) => {
    if (hit.path.startsWith('/slow')) void held.opened.then(() => res.end('late'));
    else res.end('ok');
  });
  const at = (path: string) => host.url.replace(/\/hook$/, path);
  const endpoints = new EndpointStore(pool, new SecretBox(SecretBox.generateKey()));
  const deliveries = new DeliveryStore(pool);
  const slowWorkspace = randomUUID();
  const otherWorkspace = randomUUID();
  await endpoints.create(slowWorkspace, { url: at('/slow'), events: ['*'] });
  await endpoints.create(otherWorkspace, { url: at('/fast'), events: ['*'] });
  // A deadline far beyond the test's time: the other workspace's delivery must not wait for it.
  const worker = loopbackWorker(
    { pool, deliveries, endpoints },
    { timeoutMs: 120_000, concurrency: 16, perEndpointConcurrency: 8 },
  );
  worker.start();
  try {
    await deliveries.scheduleMany(Array.from({ length: 8 }, () => eventToSchedule(slowWorkspace)));
    worker.wake();
    const slowHits = () => host.hits.filter((hit) => hit.path.startsWith('/slow')).length;
    await waitFor(() => slowHits() === 8, { what: "the slow endpoint's eight attempts under way" });

    await deliveries.scheduleMany([eventToSchedule(otherWorkspace)]);
    worker.wake();
    await waitFor(() => host.hits.some((hit) => hit.path.startsWith('/fast')), {
      what: "the other workspace's delivery",
      timeoutMs: 10_000,
    });
    expect(slowHits()).toBe(8);
  } finally {
    held.open();
    await worker.stop();
    await host.close();
  }
});

it("one workspace's many slow endpoints hold no more than its share of the worker's slots", async () => {
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
  // Enough endpoints, each within its own cap, to take every slot of the worker.
  for (let i = 0; i < 8; i++) await endpoints.create(slowWorkspace, { url: at(`/slow/${i}`), events: ['*'] });
  await endpoints.create(otherWorkspace, { url: at('/fast'), events: ['*'] });
  const worker = loopbackWorker(
    { pool, deliveries, endpoints },
    { timeoutMs: 120_000, concurrency: 16, perEndpointConcurrency: 4 },
  );
  worker.start();
  try {
    // A backlog of the slow workspace's, older than anything the other one will have.
    await deliveries.scheduleMany(Array.from({ length: 6 }, () => eventToSchedule(slowWorkspace)));
    worker.wake();
    const slowHits = () => host.hits.filter((hit) => hit.path.startsWith('/slow')).length;
    // Half of the worker's sixteen slots, though its endpoints had room for thirty-two.
    await waitFor(() => slowHits() === 8, { what: "the slow workspace's share of the slots" });

    await deliveries.scheduleMany([eventToSchedule(otherWorkspace)]);
    worker.wake();
    await waitFor(() => host.hits.some((hit) => hit.path.startsWith('/fast')), {
      what: "the other workspace's delivery",
      timeoutMs: 10_000,
    });
    expect(slowHits()).toBe(8);
  } finally {
    held.open();
    await worker.stop();
    await host.close();
  }
});
