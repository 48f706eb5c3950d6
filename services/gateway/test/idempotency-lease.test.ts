import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { createPool, migrate, type Pool } from '@inbox/db';
import { createHttpApp, createLogger, finishHttpApp, listen, type RunningServer } from '@inbox/service-kit';
import { createDatabase } from '@inbox/testkit';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { requestHash } from '../src/domain/request-hash.js';
import { idempotency } from '../src/handlers/idempotency.js';
import { IdempotencyStore } from '../src/store/idempotency.js';

// A key in progress is held under a lease its request renews: a slow live holder keeps it, a dead
// holder's key (a gateway killed mid-request) is taken over as soon as the lease lapses.

const workspaceId = randomUUID();
const leaseMs = 400;
let pool: Pool;
let store: IdempotencyStore;
let http: RunningServer;
let runs = 0;

beforeAll(async () => {
  pool = createPool({ url: await createDatabase(inject('infra').postgresAdminUrl), schema: 'gateway' });
  await migrate(pool, {
    schema: 'gateway',
    directory: fileURLToPath(new URL('../migrations', import.meta.url)),
  });
  store = new IdempotencyStore(pool);
  const logger = createLogger('gateway', { level: 'silent' });
  const once = idempotency({ store, logger, leaseMs, heartbeatMs: 100, waitMs: 200 });
  const app = createHttpApp({ logger });
  app.use((_req, res, next) => {
    res.locals.workspaceId = workspaceId;
    next();
  });
  app.post(
    '/slow',
    once('t', async (_req, res) => {
      runs += 1;
      // Several leases long: only the heartbeat keeps the key.
      await new Promise((resolve) => setTimeout(resolve, leaseMs * 4));
      res.json({ run: runs });
    }),
  );
  app.post(
    '/quick',
    once('t', (_req, res) => {
      runs += 1;
      res.json({ run: runs });
    }),
  );
  finishHttpApp(app, logger);
  http = await listen(app, 0, '127.0.0.1');
});
afterAll(async () => {
  await http?.close(100);
  await pool?.end();
});

const post = (path: string, key: string) =>
  fetch(`${http.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': key },
    body: JSON.stringify({ n: 1 }),
  });

describe('an Idempotency-Key under a lease', () => {
  it('stays with a live holder however long its request runs', async () => {
    const key = randomUUID();
    const before = runs;
    const first = post('/slow', key);
    await new Promise((resolve) => setTimeout(resolve, leaseMs * 2));
    // Two leases in, the first request still runs: a retry waits, then is told to come back.
    const retry = await post('/slow', key);
    expect(retry.status).toBe(409);
    expect(retry.headers.get('retry-after')).toBe('1');
    expect(await retry.json()).toEqual({
      error: 'Uma requisição com esta Idempotency-Key ainda está em andamento',
    });
    expect((await first).status).toBe(200);
    const replay = await post('/slow', key);
    expect(await replay.json()).toEqual({ run: before + 1 });
    expect(runs).toBe(before + 1);
  });

  it("is taken over once a dead holder's lease lapses", async () => {
    const key = randomUUID();
    // What a gateway killed mid-request leaves: a claim nobody renews.
    const dead = await store.claim(workspaceId, key, requestHash('t', { n: 1 }), leaseMs);
    expect(dead.kind).toBe('claimed');
    const before = runs;
    const blocked = await post('/quick', key);
    expect(blocked.status).toBe(409);
    await new Promise((resolve) => setTimeout(resolve, leaseMs + 100));
    const takeover = await post('/quick', key);
    expect(takeover.status).toBe(200);
    expect(runs).toBe(before + 1);
  });

  it('lets the old holder neither renew, record nor release a key taken over', async () => {
    const key = randomUUID();
    const old = await store.claim(workspaceId, key, 'h', 1);
    await new Promise((resolve) => setTimeout(resolve, 20));
    const current = await store.claim(workspaceId, key, 'h', 60_000);
    if (old.kind !== 'claimed' || current.kind !== 'claimed') throw new Error('expected two claims');
    expect(await store.renew(workspaceId, key, old.holder, 60_000)).toBe(false);
    await store.complete(workspaceId, key, old.holder, 200, { from: 'old' });
    await store.release(workspaceId, key, old.holder);
    expect(await store.peek(workspaceId, key, 'h')).toEqual({ kind: 'in_progress' });
    await store.complete(workspaceId, key, current.holder, 200, { from: 'current' });
    expect(await store.peek(workspaceId, key, 'h')).toEqual({
      kind: 'completed',
      status: 200,
      body: { from: 'current' },
    });
  });

  it('is taken over within 10 seconds with the default lease', async () => {
    const key = randomUUID();
    const logger = createLogger('gateway', { level: 'silent' });
    const defaults = idempotency({ store, logger });
    await store.claim(workspaceId, key, requestHash('t', {}), 6_000);
    const app = createHttpApp({ logger });
    app.use((_req, res, next) => {
      res.locals.workspaceId = workspaceId;
      next();
    });
    app.post(
      '/d',
      defaults('t', (_req, res) => void res.json({ ran: true })),
    );
    finishHttpApp(app, logger);
    const server = await listen(app, 0, '127.0.0.1');
    try {
      // A waiter (15 s by default) sees the dead claim lapse and runs the request itself.
      const answer = await fetch(`${server.url}/d`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': key },
        body: '{}',
      });
      expect(answer.status).toBe(200);
      expect(await answer.json()).toEqual({ ran: true });
    } finally {
      await server.close(100);
    }
  }, 10_000);
});
