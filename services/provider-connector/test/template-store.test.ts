import { randomUUID } from 'node:crypto';
import type { Pool } from '@inbox/db';
import { waitFor } from '@inbox/testkit';
import { afterAll, beforeAll, expect, it } from 'vitest';
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

it("replaces a catalogue with one listing, never two replicas' listings together", async () => {
  const integrationId = await officialIntegration();
  const store = new TemplateStore(pool);
  await store.replace(integrationId, [template('old')]);

  // Another replica's replacement, under way: it has taken the integration's row as replace does,
  // deleted the catalogue and written its listing, and not committed.
  const other = await pool.connect();
  let replaced = false;
  try {
    await other.query('begin');
    await other.query('select 1 from integrations where id = $1 for update', [integrationId]);
    await other.query('delete from templates where integration_id = $1', [integrationId]);
    await other.query(
      `insert into templates (integration_id, name, language, status, body) values ($1, 'first', 'pt_BR', 'APPROVED', 'x')`,
      [integrationId],
    );
    const replacing = store.replace(integrationId, [template('second')]).then(() => {
      replaced = true;
    });
    await waitFor(
      async () =>
        replaced ||
        (
          await pool.query(
            `select 1 from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`,
          )
        ).rowCount === 1,
      { what: 'this replacement done or waiting' },
    );
    await other.query('commit');
    await replacing;
  } finally {
    other.release();
  }
  const { rows } = await pool.query<{ name: string }>(
    'select name from templates where integration_id = $1 order by name',
    [integrationId],
  );
  expect(rows.map((row) => row.name)).toEqual(['second']);
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

it("holds no send behind a catalogue being replaced, neither its integration's nor another workspace's in the same statement", async () => {
  const listedId = await officialIntegration();
  const store = new TemplateStore(pool);
  await store.replace(listedId, [template('old')]);
  // A replace that takes long (here: its delete waits on a row another transaction holds).
  const holder = await pool.connect();
  await holder.query('begin');
  await holder.query('select 1 from templates where integration_id = $1 for update', [listedId]);
  const replacing = store.replace(listedId, [template('new')]);
  await waitFor(
    async () => {
      const { rows } = await pool.query<{ waiting: number }>(
        `select count(*)::int as waiting from pg_stat_activity
          where wait_event_type = 'Lock' and query like 'delete from templates%'`,
      );
      return rows[0]!.waiting > 0;
    },
    { what: 'the replace holding its integration while it waits' },
  );
  try {
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
    await holder.query('rollback');
    holder.release();
  }
  await replacing;
  expect((await store.list(listedId)).templates.map((t) => t.name)).toEqual(['new']);
});
