import { randomUUID } from 'node:crypto';
import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createPool, migrate, type Pool } from '@inbox/db';
import { createDatabase, waitFor } from '@inbox/testkit';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import type { ProviderTemplate } from '../src/adapters/channel-adapter.js';
import { SendRecords } from '../src/store/send-records.js';
import { TemplateStore } from '../src/store/templates.js';
import { migratedPool } from './support.js';

let pool: Pool;
beforeAll(async () => {
  pool = await migratedPool();
});
afterAll(async () => {
  await pool?.end();
});

const template = (name: string): ProviderTemplate => ({
  name,
  language: 'pt_BR',
  status: 'APPROVED',
  body: `Olá de ${name}`,
  header_format: null,
  buttons: [],
});

/** A connected official integration's row, as the catalogue needs it. */
async function officialIntegration(workspaceId = randomUUID()): Promise<string> {
  const id = randomUUID();
  await pool.query(
    `insert into integrations (id, workspace_id, channel, provider, status, config_sealed, account_id)
     values ($1, $2, 'chat-official', 'chat-official', 'connected', 'sealed', 'waba')`,
    [id, workspaceId],
  );
  return id;
}

/**
 * Holds the next replacement part-way: a transaction of another session writes, and does not commit, a
 * row of the generation the next replacement takes, named as one of that listing's later templates; the
 * replacement's statement that writes it waits for the holder to end.
 */
async function holdNextReplacement(integrationId: string, name: string) {
  const { rows } = await pool.query<{ next: string }>(
    "select (nextval('template_generations') + 1)::text as next",
  );
  const holder = await pool.connect();
  await holder.query('begin');
  await holder.query(
    `insert into templates (integration_id, generation, name, language, status, body)
     values ($1, $2, $3, 'pt_BR', 'APPROVED', 'x')`,
    [integrationId, rows[0]!.next, name],
  );
  return {
    /** Until the replacement's write waits on the holder. */
    waiting: () =>
      waitFor(
        async () =>
          (
            await pool.query(
              `select 1 from pg_stat_activity
                where datname = current_database() and wait_event_type = 'Lock' and query like 'insert into templates%'`,
            )
          ).rowCount === 1,
        { what: 'the replacement waiting part-way' },
      ),
    release: async () => {
      await holder.query('rollback');
      holder.release();
    },
  };
}

const names = async (store: TemplateStore, integrationId: string) =>
  (await store.list(integrationId)).templates.map((t) => t.name);

const listing = (prefix: string, count: number) =>
  Array.from({ length: count }, (_, i) => template(`${prefix}-${String(i).padStart(3, '0')}`));

it("shows one listing whole, never one half written nor two replicas' listings together, and keeps no other", async () => {
  const integrationId = await officialIntegration();
  const store = new TemplateStore(pool);
  await store.replace(integrationId, [template('old')]);

  // A replica's replacement, waiting part-way: its first statement's templates are written.
  const held = await holdNextReplacement(integrationId, 'first-280');
  const first = store.replace(integrationId, listing('first', 300));
  try {
    await held.waiting();
    expect(await names(store, integrationId)).toEqual(['old']);
    // Another replica's, begun later, ends first.
    await store.replace(integrationId, [template('second')]);
    expect(await names(store, integrationId)).toEqual(['second']);
  } finally {
    await held.release();
  }
  await first;
  // The first ends last, and the later listing stands.
  expect(await names(store, integrationId)).toEqual(['second']);
  const { rows } = await pool.query<{ name: string }>(
    'select name from templates where integration_id = $1 order by name',
    [integrationId],
  );
  expect(rows.map((row) => row.name)).toEqual(['second']);
  expect((await store.find(integrationId, 'second', 'pt_BR'))?.body).toBe('Olá de second');
  expect(await store.find(integrationId, 'first-000', 'pt_BR')).toBeUndefined();
});

it('keeps the catalogue as it was, and no row of a replacement that failed part-way', async () => {
  const integrationId = await officialIntegration();
  const store = new TemplateStore(pool);
  await store.replace(integrationId, [template('old')]);
  const held = await holdNextReplacement(integrationId, 'failed-280');
  const failing = store.replace(integrationId, listing('failed', 300)).then(
    () => 'replaced',
    () => 'failed',
  );
  try {
    await held.waiting();
    await pool.query(
      `select pg_cancel_backend(pid) from pg_stat_activity
        where datname = current_database() and wait_event_type = 'Lock' and query like 'insert into templates%'`,
    );
    expect(await failing).toBe('failed');
  } finally {
    await held.release();
  }
  expect(await names(store, integrationId)).toEqual(['old']);
  const { rows } = await pool.query<{ n: number }>(
    'select count(*)::int as n from templates where integration_id = $1',
    [integrationId],
  );
  expect(rows[0]!.n).toBe(1);
});

it('keeps each name and language once, its text storable, and leaves out templates no send could use', async () => {
  const integrationId = await officialIntegration();
  const store = new TemplateStore(pool);
  await store.replace(integrationId, [
    template('repetido'),
    { ...template('repetido'), body: 'O último listado' },
    { ...template('nulo'), body: 'a\u0000b', buttons: [{ type: 'URL', text: 'c\u0000d', 'k\u0000': 1 }] },
    // One row once stored: NUL becomes U+FFFD.
    template('par\u0000'),
    { ...template('par\uFFFD'), body: 'O segundo' },
    template('n'.repeat(513)),
    { ...template('longo'), body: 'x'.repeat(40_000) },
  ]);
  const listed = (await store.list(integrationId)).templates;
  expect(listed.map((t) => [t.name, t.body])).toEqual([
    ['nulo', 'a\uFFFDb'],
    ['par\uFFFD', 'O segundo'],
    ['repetido', 'O último listado'],
  ]);
  expect(listed[0]!.buttons).toEqual([{ type: 'URL', text: 'c\uFFFDd', 'k\uFFFD': 1 }]);
});

it('writes a maximal catalogue in short statements, none in a transaction that holds the outbox relays back', async () => {
  const integrationId = await officialIntegration();
  // A relay publishes what committed before the oldest transaction still running: every statement of the
  // replacement is checked to begin with no client's transaction of this database holding an id. (An
  // autovacuum ANALYZE of the templates just written holds one for a moment: Postgres's, not ours.)
  const statements: unknown[][] = [];
  const watched = Object.assign(Object.create(pool) as Pool, {
    query: async (text: string, values?: unknown[]) => {
      const { rows } = await pool.query<{ held: number }>(
        `select count(*)::int as held from pg_stat_activity
          where datname = current_database() and backend_xid is not null and pid <> pg_backend_pid()
            and backend_type = 'client backend'`,
      );
      statements.push([text, values, rows[0]!.held]);
      return pool.query(text, values);
    },
  });
  const store = new TemplateStore(watched);
  const body = 'Olá {{1}}, '.repeat(90);
  await store.replace(
    integrationId,
    listing('old', 10_000).map((t) => ({ ...t, body })),
  );
  statements.length = 0;
  await store.replace(
    integrationId,
    listing('new', 10_000).map((t) => ({ ...t, body })),
  );

  expect(statements.every(([, , held]) => held === 0)).toBe(true);
  const inserts = statements.filter(([text]) => String(text).startsWith('insert into templates'));
  expect(inserts.length).toBeGreaterThanOrEqual(40);
  for (const [, values] of inserts) expect((values as unknown[][])[2]!.length).toBeLessThanOrEqual(250);
  expect((await store.list(integrationId)).templates).toHaveLength(10_000);
  const { rows } = await pool.query<{ n: number }>(
    'select count(*)::int as n from templates where integration_id = $1',
    [integrationId],
  );
  expect(rows[0]!.n).toBe(10_000);
});

it("holds no send behind a catalogue being replaced, neither its integration's nor another workspace's in the same statement", async () => {
  const listedId = await officialIntegration();
  const store = new TemplateStore(pool);
  await store.replace(listedId, [template('old')]);
  // A replace that takes long: its write waits on a row another transaction holds.
  const held = await holdNextReplacement(listedId, 'new-000');
  const replacing = store.replace(listedId, listing('new', 1));
  try {
    await held.waiting();
    // One turn's sends share a statement: one through the integration being listed, one of another workspace.
    const records = new SendRecords(pool);
    const otherWorkspace = randomUUID();
    const otherId = await officialIntegration(otherWorkspace);
    const begun = Promise.all([
      records.begin({ workspaceId: randomUUID(), integrationId: listedId, messageId: randomUUID() }),
      records.begin({ workspaceId: otherWorkspace, integrationId: otherId, messageId: randomUUID() }),
    ]);
    const settled = await Promise.race([
      begun,
      new Promise((resolve) => setTimeout(() => resolve('still waiting'), 1_000)),
    ]);
    expect(settled).toEqual([true, true]);
  } finally {
    await held.release();
  }
  await replacing;
  expect(await names(store, listedId)).toEqual(['new-000']);
});

it('reads a catalogue written before generations, and replaces it', async () => {
  const migrations = fileURLToPath(new URL('../migrations', import.meta.url));
  const before = await mkdtemp(join(tmpdir(), 'connector-migrations-'));
  const upgraded = createPool({
    url: await createDatabase(inject('infra').postgresAdminUrl),
    schema: 'connector',
  });
  try {
    await cp(migrations, before, {
      recursive: true,
      filter: (path) => !/\/(01[2-9]|0[2-9]\d)_[^/]*$/.test(path),
    });
    await migrate(upgraded, { schema: 'connector', directory: before, outbox: true });
    const integrationId = randomUUID();
    await upgraded.query(
      `insert into integrations (id, workspace_id, channel, provider, status, config_sealed, account_id)
       values ($1, $2, 'chat-official', 'chat-official', 'connected', 'sealed', 'waba')`,
      [integrationId, randomUUID()],
    );
    await upgraded.query(
      `insert into templates (integration_id, name, language, status, body) values ($1, 'antigo', 'pt_BR', 'APPROVED', 'x')`,
      [integrationId],
    );
    expect(await migrate(upgraded, { schema: 'connector', directory: migrations, outbox: true })).toContain(
      '012_template_generations.sql',
    );
    const store = new TemplateStore(upgraded);
    expect(await names(store, integrationId)).toEqual(['antigo']);
    await store.replace(integrationId, [template('novo')]);
    const { rows } = await upgraded.query<{ name: string }>('select name from templates');
    expect(rows.map((row) => row.name)).toEqual(['novo']);
  } finally {
    await upgraded.end();
    await rm(before, { recursive: true, force: true });
  }
});
