import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { AppError } from '@inbox/contracts';
import { createPool, migrate, type Pool } from '@inbox/db';
import { createHttpApp, createLogger, finishHttpApp, listen, type RunningServer } from '@inbox/service-kit';
import { createDatabase, waitFor } from '@inbox/testkit';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { idempotency } from '../src/handlers/idempotency.js';
import { IdempotencyStore } from '../src/store/idempotency.js';

// The Idempotency-Key middleware around handlers that end a request in every way one can: whatever
// happens after the key was claimed, it must not stay "in progress" for the next two minutes.

const workspaceId = randomUUID();
let pool: Pool;
let http: RunningServer;

beforeAll(async () => {
  pool = createPool({ url: await createDatabase(inject('infra').postgresAdminUrl), schema: 'gateway' });
  await migrate(pool, {
    schema: 'gateway',
    directory: fileURLToPath(new URL('../migrations', import.meta.url)),
  });
  const logger = createLogger('gateway', { level: 'silent' });
  const once = idempotency({ store: new IdempotencyStore(pool), logger });
  const app = createHttpApp({ logger });
  app.use((_req, res, next) => {
    res.locals.workspaceId = workspaceId;
    next();
  });
  // Postgres refuses the NUL escape in jsonb, so this answer cannot be recorded.
  app.post(
    '/unrecordable',
    once('t', (_req, res) => void res.json({ file: 'a\u0000b' })),
  );
  app.post(
    '/without-json',
    once('t', (_req, res) => void res.status(200).send('ok')),
  );
  app.post(
    '/throws',
    once('t', () => Promise.reject(new Error('boom'))),
  );
  app.post(
    '/throws-after-headers',
    once('t', (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('partial');
      throw new Error('boom');
    }),
  );
  app.post(
    '/refuses',
    once('t', () => Promise.reject(AppError.notFound('Contato não encontrado'))),
  );
  finishHttpApp(app, logger);
  http = await listen(app, 0, '127.0.0.1');
});
afterAll(async () => {
  await http?.close(100);
  await pool?.end();
});

const post = (path: string, key: string, signal?: AbortSignal) =>
  fetch(`${http.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': key },
    body: JSON.stringify({ n: 1 }),
    signal,
  });

async function recordOf(key: string): Promise<string | undefined> {
  const { rows } = await pool.query<{ status: string }>(
    'select status from idempotency_keys where workspace_id = $1 and key = $2',
    [workspaceId, key],
  );
  return rows[0]?.status;
}

describe('a claimed Idempotency-Key', () => {
  it.each([
    ['/unrecordable', 200],
    ['/without-json', 200],
    ['/throws', 500],
  ])('is released when %s ends the request', async (path, status) => {
    const key = randomUUID();
    const answer = await post(path, key);
    expect(answer.status).toBe(status);
    await answer.text();
    await waitFor(async () => (await recordOf(key)) === undefined, {
      timeoutMs: 2_000,
      what: `${path} to release its key`,
    });
  });

  it('is released when the handler throws after the answer began, once the connection ends', async () => {
    const key = randomUUID();
    const abort = new AbortController();
    const answer = await post('/throws-after-headers', key, abort.signal);
    expect(answer.status).toBe(200);
    abort.abort();
    await waitFor(async () => (await recordOf(key)) === undefined, {
      timeoutMs: 2_000,
      what: 'the key to be released',
    });
  });

  it('keeps an answer below 500 given through the error handler, and replays it', async () => {
    const key = randomUUID();
    const first = await post('/refuses', key);
    expect(first.status).toBe(404);
    await first.text();
    await waitFor(async () => (await recordOf(key)) === 'completed', {
      timeoutMs: 2_000,
      what: 'the record',
    });
    const again = await post('/refuses', key);
    expect(again.status).toBe(404);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await again.json()).toEqual({ error: 'Contato não encontrado' });
  });
});

it('forgets every record of more than a day ago, in batches smaller than their number, and keeps the others', async () => {
  const other = randomUUID();
  await pool.query(
    `insert into idempotency_keys (workspace_id, key, request_hash, status, created_at)
     select $1, 'old-' || n, 'h', 'completed', now() - interval '25 hours' from generate_series(1, 2500) n`,
    [other],
  );
  await pool.query(
    `insert into idempotency_keys (workspace_id, key, request_hash, status) values ($1, 'fresh', 'h', 'completed')`,
    [other],
  );
  expect(await new IdempotencyStore(pool).deleteExpired(1_000)).toBe(2_500);
  const { rows } = await pool.query<{ key: string }>(
    'select key from idempotency_keys where workspace_id = $1',
    [other],
  );
  expect(rows.map((row) => row.key)).toEqual(['fresh']);
});
