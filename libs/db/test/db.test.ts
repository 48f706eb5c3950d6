import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { type Bus, InProcessBus, NatsBus } from '@inbox/bus';
import { eventTypes, type LeadMovedEvent, type WireEvent } from '@inbox/contracts';
import { createDatabase, startProcess, uniquePrefix, waitFor, watchedPool } from '@inbox/testkit';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  createPool,
  EventTooLarge,
  type MigrationLockWait,
  maxEventBytes,
  migrate,
  OutboxRelay,
  type Pool,
  prepareEvent,
  type Queryable,
  withTransaction,
  writeEvent,
  writeEventsIfChanged,
  writeEvents as writeEventsInOne,
} from '../src/index.js';
import { metricsText } from './metrics-text.js';

const migrations = fileURLToPath(new URL('./fixtures/migrations', import.meta.url));

/** A lead move: an event of the catalogue with a free-text field; `n` tells the moves apart. */
const leadMoved = (workspace: string, n: number, stageName = `stage ${n}`): LeadMovedEvent => ({
  workspace_id: workspace,
  contact_id: randomUUID(),
  pipeline_id: randomUUID(),
  pipeline_name: 'vendas',
  from_stage: null,
  from_stage_name: null,
  to_stage: `s${n}`,
  to_stage_name: stageName,
  conversation_id: null,
  moved_at: new Date().toISOString(),
});
/** A conversation's resolution, ready to write: an event with an ordering key (the conversation). */
const resolvedEvent = (workspace: string, conversation: string) =>
  prepareEvent(eventTypes.conversationResolved, {
    event: eventTypes.conversationResolved,
    workspace_id: workspace,
    conversation_id: conversation,
    status: { value: 'resolved' as const },
  });
let url: string;
let pool: Pool;

beforeAll(async () => {
  url = await createDatabase(inject('infra').postgresAdminUrl);
  pool = createPool({ url, schema: 'relaytest' });
});
afterAll(async () => {
  await pool.end();
});

describe('migrations', () => {
  it('apply once each, in number order, even when many replicas start at once', async () => {
    const pools = Array.from({ length: 4 }, () => createPool({ url, schema: 'concurrent' }));
    const results = await Promise.all(
      pools.map((p) => migrate(p, { schema: 'concurrent', directory: migrations })),
    );
    expect(results.flat()).toEqual(['001_things.sql', '002_things_index.sql', '003_things_by_name.sql']);
    const again = await migrate(pools[0]!, { schema: 'concurrent', directory: migrations });
    expect(again).toEqual([]);
    const { rows } = await pools[0]!.query('select version from schema_migrations order by version');
    expect(rows.map((r) => r.version)).toEqual([1, 2, 3]);
    // Built concurrently (Postgres refuses that inside a transaction) while the other replicas waited
    // for the lock, and whole.
    const { rows: index } = await pools[0]!.query(
      `select i.indisvalid from pg_index i join pg_class c on c.oid = i.indexrelid
        join pg_namespace n on n.oid = c.relnamespace where n.nspname = 'concurrent' and c.relname = 'things_by_name'`,
    );
    expect(index).toEqual([{ indisvalid: true }]);
    await Promise.all(pools.map((p) => p.end()));
  });

  it('bring an outbox created by an earlier version up to date, keeping its rows', async () => {
    const p = createPool({ url, schema: 'upgraded' });
    // The install as the first version of the outbox left it: version 0 applied, one row pending.
    await p.query(`create schema upgraded;
      create table upgraded.schema_migrations (version int primary key, name text not null, applied_at timestamptz not null default now());
      create table upgraded.outbox (seq bigserial primary key, id uuid not null unique, type text not null,
        workspace_id uuid not null, occurred_at timestamptz not null, data jsonb not null, trace_context jsonb,
        published_at timestamptz, txid xid8 not null default pg_current_xact_id());
      create index outbox_pending on upgraded.outbox (seq) where published_at is null;
      insert into upgraded.schema_migrations (version, name) values (0, '000_outbox (from @inbox/db)');
      insert into upgraded.outbox (id, type, workspace_id, occurred_at, data)
        values (gen_random_uuid(), 'thing.made', gen_random_uuid(), now(), '{}');`);
    const applied = await migrate(p, { schema: 'upgraded', directory: migrations, outbox: true });
    expect(applied).toEqual([
      '000_outbox_dead_letters (from @inbox/db)',
      '000_outbox_pruning (from @inbox/db)',
      '000_outbox_ordering (from @inbox/db)',
      '001_things.sql',
      '002_things_index.sql',
      '003_things_by_name.sql',
    ]);
    const { rows } = await p.query('select failed_at, publish_error, publish_attempts from outbox');
    expect(rows).toEqual([{ failed_at: null, publish_error: null, publish_attempts: 0 }]);
    expect(await migrate(p, { schema: 'upgraded', directory: migrations, outbox: true })).toEqual([]);
    await p.end();
  });

  it('build an index concurrently, the table taking writes meanwhile', async () => {
    const p = createPool({ url, schema: 'busy' });
    await migrate(p, { schema: 'busy', directory: migrations });
    await p.query('drop index things_by_name');
    await p.query('delete from schema_migrations where version = 3');
    // A transaction that wrote to the table and is still open: a plain create index would wait for it,
    // and so would every write after it; a concurrent build waits for it too, but blocks no new write.
    const writer = await p.connect();
    await writer.query('begin');
    await writer.query("insert into things values (gen_random_uuid(), gen_random_uuid(), 'a')");
    const building = migrate(p, { schema: 'busy', directory: migrations });
    await new Promise((resolve) => setTimeout(resolve, 300));
    // Meanwhile, another write goes through at once.
    await p.query("insert into things values (gen_random_uuid(), gen_random_uuid(), 'b')");
    await writer.query('commit');
    writer.release();
    expect(await building).toEqual(['003_things_by_name.sql']);
    await p.end();
  });

  it('build again an index a failed build left invalid, and keep one that was finished', async () => {
    const p = createPool({ url, schema: 'halfbuilt' });
    await migrate(p, { schema: 'halfbuilt', directory: migrations });
    const validity = async () =>
      (
        await p.query<{ indisvalid: boolean }>(
          `select i.indisvalid from pg_index i join pg_class c on c.oid = i.indexrelid
            join pg_namespace n on n.oid = c.relnamespace where n.nspname = 'halfbuilt' and c.relname = 'things_by_name'`,
        )
      ).rows.map((row) => row.indisvalid);
    const finished = (await p.query(`select 'halfbuilt.things_by_name'::regclass::oid as oid`)).rows[0];
    // Run again (as after a process that died between the build and its record): the finished index stays.
    await p.query('delete from schema_migrations where version = 3');
    expect(await migrate(p, { schema: 'halfbuilt', directory: migrations })).toEqual([
      '003_things_by_name.sql',
    ]);
    expect((await p.query(`select 'halfbuilt.things_by_name'::regclass::oid as oid`)).rows[0]).toEqual(
      finished,
    );
    // A build that failed part-way leaves its index invalid (here a unique one over duplicates).
    await p.query('drop index things_by_name');
    await p.query(
      "insert into things values (gen_random_uuid(), gen_random_uuid(), 'twin'), (gen_random_uuid(), gen_random_uuid(), 'twin')",
    );
    await expect(
      p.query('create unique index concurrently things_by_name on things (name)'),
    ).rejects.toThrow();
    expect(await validity()).toEqual([false]);
    await p.query('delete from schema_migrations where version = 3');
    expect(await migrate(p, { schema: 'halfbuilt', directory: migrations })).toEqual([
      '003_things_by_name.sql',
    ]);
    expect(await validity()).toEqual([true]);
    await p.end();
  });

  // hashtext gives 'migrate:held' a negative key and 'migrate:kept' a positive one: pg_locks shows the two
  // halves of each differently.
  it.each(['held', 'kept'])(
    'say, while waiting for the lock, which session holds it (schema %s)',
    async (schema) => {
      const p = createPool({ url, schema });
      const holder = await p.connect();
      await holder.query("set application_name = 'replica-that-builds'");
      const holderPid = (await holder.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid;
      await holder.query('select pg_advisory_lock(hashtext($1))', [`migrate:${schema}`]);
      // Another schema's lock, held too, is not the one named.
      const other = await p.connect();
      await other.query('select pg_advisory_lock(hashtext($1))', [`migrate:${schema}-elsewhere`]);
      const reports: MigrationLockWait[] = [];
      const waiting = migrate(p, {
        schema,
        directory: migrations,
        reportEveryMs: 150,
        onWaiting: (report) => reports.push(report),
      });
      await waitFor(() => reports.length >= 2, { what: 'two reports of the wait' });
      expect(reports[0]).toMatchObject({
        schema,
        holder: { pid: holderPid, applicationName: 'replica-that-builds', state: 'idle' },
      });
      expect(reports[0]!.holder!.query).toContain('pg_advisory_lock');
      expect(reports[0]!.waitedMs).toBeGreaterThanOrEqual(150);
      expect(reports[1]!.waitedMs).toBeGreaterThan(reports[0]!.waitedMs);
      await holder.query('select pg_advisory_unlock(hashtext($1))', [`migrate:${schema}`]);
      expect(await waiting).toEqual(['001_things.sql', '002_things_index.sql', '003_things_by_name.sql']);
      holder.release();
      other.release();
      await p.end();
    },
  );

  it('give up waiting for a table’s lock and try again, so that the table’s other queries are not held behind', async () => {
    const p = createPool({ url, schema: 'queued' });
    await migrate(p, { schema: 'queued', directory: migrations });
    // A long statement of the release before, reading the table: the alter must wait for it.
    const reader = await p.connect();
    await reader.query('begin');
    await reader.query('select count(*) from things');
    let gaveUp = 0;
    const applying = migrate(p, {
      schema: 'queued',
      directory: fileURLToPath(new URL('./fixtures/later-migrations', import.meta.url)),
      lockTimeoutMs: 100,
      onLockTimeout: ({ attempts }) => {
        gaveUp = attempts;
      },
    });
    // Another query of the table, while the alter is still waiting: with the alter queued for good, it
    // waited behind it until the long statement ended (its own timeout here makes that a failure).
    const other = await p.connect();
    try {
      await other.query("set statement_timeout to '5s'");
      await waitFor(() => gaveUp >= 1, { what: 'the alter giving up once' });
      // Answered across the migration's next attempts, each waiting behind one of them at most.
      while (gaveUp < 3)
        expect((await other.query('select count(*)::int as n from things')).rows).toEqual([{ n: 0 }]);
    } finally {
      other.release();
      await reader.query('commit');
      reader.release();
    }
    expect(await applying).toEqual(['004_things_note.sql']);
    expect((await p.query('select note from things')).fields.map((field) => field.name)).toEqual(['note']);
    await p.end();
  });

  it('refuse a schema name that could inject SQL', async () => {
    const p = createPool({ url, schema: 'guarded' });
    await expect(migrate(p, { schema: 'bad-name; drop', directory: migrations })).rejects.toThrow(
      /not a safe SQL identifier/,
    );
    await p.end();
  });
});

describe('transactional outbox', () => {
  beforeAll(async () => {
    await migrate(pool, { schema: 'relaytest', directory: migrations, outbox: true });
  });

  async function writeEvents(count: number): Promise<string[]> {
    const workspace = randomUUID();
    const ids: string[] = [];
    for (let i = 0; i < count; i++) {
      await withTransaction(pool, async (client) => {
        await client.query('insert into things (id, workspace_id, name) values ($1, $2, $3)', [
          randomUUID(),
          workspace,
          `thing ${i}`,
        ]);
        ids.push((await writeEvent(client, eventTypes.leadMoved, leadMoved(workspace, i))).id);
      });
    }
    return ids;
  }

  async function streamContents(prefix: string, expected: number): Promise<WireEvent[]> {
    const reader = await NatsBus.connect({ url: inject('infra').natsUrl, prefix });
    const seen: WireEvent[] = [];
    await reader.consume({ durable: 'reader', filter: '>' }, async (event) => {
      seen.push(event);
    });
    await waitFor(() => seen.length >= expected, { what: `${expected} events in the stream` });
    // Give a duplicate, were there one, the chance to arrive before judging.
    const marker = {
      id: randomUUID(),
      type: 'marker',
      workspace_id: randomUUID(),
      occurred_at: new Date().toISOString(),
      data: {},
    };
    await reader.publish(marker);
    await waitFor(() => seen.some((e) => e.id === marker.id), { what: 'marker' });
    await reader.drain();
    return seen.filter((e) => e.type !== 'marker');
  }

  it('rolls the event back with the state change', async () => {
    const workspace = randomUUID();
    await expect(
      withTransaction(pool, async (client) => {
        await writeEvent(client, eventTypes.leadMoved, leadMoved(workspace, 0));
        throw new Error('state change failed');
      }),
    ).rejects.toThrow('state change failed');
    const { rows } = await pool.query('select 1 from outbox where workspace_id = $1', [workspace]);
    expect(rows).toHaveLength(0);
  });

  it('commits a state change written along with its event in one statement, or neither', async () => {
    const workspace = randomUUID();
    const conversation = randomUUID();
    const thing = randomUUID();
    const resolved = {
      event: eventTypes.conversationResolved,
      workspace_id: workspace,
      conversation_id: conversation,
      status: { value: 'resolved' as const },
    };
    const insertThing = (id: string) => ({
      text: 'insert into things (id, workspace_id, name) values ($1, $2, $3)',
      values: [id, workspace, 'made along'],
    });
    // Ordered (its number taken in the same statement) and unordered events alike, on the pool itself.
    const ordered = await writeEvent(pool, eventTypes.conversationResolved, resolved, insertThing(thing));
    const plain = await writeEvent(
      pool,
      eventTypes.leadMoved,
      leadMoved(workspace, 0),
      insertThing(randomUUID()),
    );
    expect(ordered.ordering).toEqual({ key: conversation, seq: 1 });
    expect(plain.ordering).toBeUndefined();
    const things = await pool.query('select name from things where workspace_id = $1', [workspace]);
    expect(things.rows).toEqual([{ name: 'made along' }, { name: 'made along' }]);
    // The state change fails (the id is taken): no event is written either.
    await expect(
      writeEvent(pool, eventTypes.conversationResolved, resolved, insertThing(thing)),
    ).rejects.toThrow(/duplicate key/);
    const events = await pool.query('select ordering_seq from outbox where workspace_id = $1 order by seq', [
      workspace,
    ]);
    expect(events.rows).toEqual([{ ordering_seq: 1 }, { ordering_seq: null }]);
  });

  it('writes a type of the catalogue with that type’s data, and takes the workspace from the data', async () => {
    const workspace = randomUUID();
    const written = await withTransaction(pool, (client) =>
      writeEvent(client, eventTypes.leadMoved, leadMoved(workspace, 0)),
    );
    expect(written).toMatchObject({ type: 'lead.moved', workspace_id: workspace });
    const { rows } = await pool.query('select type, workspace_id from outbox where id = $1', [written.id]);
    expect(rows).toEqual([{ type: 'lead.moved', workspace_id: workspace }]);
    // Checked by tsc: never run.
    const refused = (client: Queryable) => [
      // @ts-expect-error: not an event of the catalogue
      writeEvent(client, 'thing.made', leadMoved(workspace, 0)),
      // @ts-expect-error: lead.moved's data lacks its stages
      writeEvent(client, eventTypes.leadMoved, { workspace_id: workspace }),
      // @ts-expect-error: another event's data
      writeEvent(client, eventTypes.messageSent, leadMoved(workspace, 0)),
    ];
    expect(refused).toBeTypeOf('function');
  });

  it('writes a batch’s events only for the rows its statement changed, numbering each key’s in turn', async () => {
    const workspace = randomUUID();
    const [one, other] = [randomUUID(), randomUUID()];
    const resolved = (conversation: string) => resolvedEvent(workspace, conversation);
    // One earlier event of the first conversation: the batch's numbers follow it.
    await writeEvent(pool, eventTypes.conversationResolved, resolved(one).envelope.data);
    const things = [randomUUID(), randomUUID(), randomUUID(), randomUUID(), randomUUID()];
    await pool.query('insert into things (id, workspace_id, name) values ($1, $2, $3)', [
      things[2],
      workspace,
      'renamed before',
    ]);
    // Renames each new thing: the third was renamed before, so its event is not written.
    const renameAlong = {
      text: `update things t set name = 'renamed' from unnest($1::uuid[]) with ordinality as v(id, n)
              where t.id = v.id and t.name = 'new' returning v.n`,
      values: [things],
    };
    await pool.query(
      `insert into things (id, workspace_id, name) select id, $2, 'new' from unnest($1::uuid[]) as id
        where id <> $3`,
      [things, workspace, things[2]],
    );
    const events = [
      resolved(one),
      resolved(other),
      resolved(one),
      resolved(one),
      prepareEvent(eventTypes.leadMoved, leadMoved(workspace, 0)),
    ];
    const written = await writeEventsIfChanged(pool, events, renameAlong);
    expect(written.map((event) => event?.ordering ?? (event ? 'unordered' : 'not written'))).toEqual([
      { key: one, seq: 2 },
      { key: other, seq: 1 },
      'not written',
      { key: one, seq: 3 },
      'unordered',
    ]);
    const { rows } = await pool.query<{ id: string; ordering_seq: string | null }>(
      'select id, ordering_seq from outbox where workspace_id = $1 order by seq',
      [workspace],
    );
    expect(rows.slice(1).map((row) => row.id)).toEqual(
      [0, 1, 3, 4].map((index) => events[index]!.envelope.id),
    );
    // No number was taken for the event not written: the conversation's next one follows without a gap.
    const next = await writeEvent(pool, eventTypes.conversationResolved, resolved(one).envelope.data);
    expect(next.ordering).toEqual({ key: one, seq: 4 });
    // A statement that changes nothing writes nothing.
    expect(await writeEventsIfChanged(pool, events.slice(0, 2), renameAlong)).toEqual([undefined, undefined]);
  });

  it('writes events in one statement in their order, numbered per key, one alone as writeEvent does', async () => {
    const workspace = randomUUID();
    const [one, other] = [randomUUID(), randomUUID()];
    const resolved = (conversation: string) => resolvedEvent(workspace, conversation);
    const events = [
      resolved(one),
      resolved(other),
      prepareEvent(eventTypes.leadMoved, leadMoved(workspace, 0)),
      resolved(one),
    ];
    const written = await writeEventsInOne(pool, events);
    expect(written.map((event) => event.ordering ?? 'unordered')).toEqual([
      { key: one, seq: 1 },
      { key: other, seq: 1 },
      'unordered',
      { key: one, seq: 2 },
    ]);
    expect((await writeEventsInOne(pool, [resolved(other)]))[0]!.ordering).toEqual({ key: other, seq: 2 });
    const { rows } = await pool.query<{ id: string }>(
      'select id from outbox where workspace_id = $1 order by seq',
      [workspace],
    );
    expect(rows.map((row) => row.id).slice(0, 4)).toEqual(events.map((event) => event.envelope.id));
    expect(rows).toHaveLength(5);
  });

  it('numbers each conversation’s public events 1, 2, 3 in commit order, and the relay carries the numbers', async () => {
    await pool.query('update outbox set published_at = now()');
    const workspace = randomUUID();
    const [one, other] = [randomUUID(), randomUUID()];
    const resolved = (conversation: string) => ({
      event: eventTypes.conversationResolved,
      workspace_id: workspace,
      conversation_id: conversation,
      status: { value: 'resolved' as const },
    });
    // The first writer holds its transaction open; the second must wait for it to take the next number.
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let inside!: () => void;
    const firstWrote = new Promise<void>((resolve) => {
      inside = resolve;
    });
    const first = withTransaction(pool, async (client) => {
      const event = await writeEvent(client, eventTypes.conversationResolved, resolved(one));
      inside();
      await held;
      return event;
    });
    await firstWrote;
    const second = withTransaction(pool, (client) =>
      writeEvent(client, eventTypes.conversationResolved, resolved(one)),
    );
    await waitFor(
      async () =>
        (
          await pool.query(
            "select 1 from pg_stat_activity where wait_event_type = 'Lock' and query like '%event_sequences%'",
          )
        ).rowCount === 1,
      { what: 'the second writer to wait on the conversation’s number' },
    );
    const elsewhere = await withTransaction(pool, (client) =>
      writeEvent(client, eventTypes.conversationResolved, resolved(other)),
    );
    release();
    const [a, b] = await Promise.all([first, second]);
    expect([a.ordering, b.ordering, elsewhere.ordering]).toEqual([
      { key: one, seq: 1 },
      { key: one, seq: 2 },
      { key: other, seq: 1 },
    ]);
    const internal = await withTransaction(pool, (client) =>
      writeEvent(client, eventTypes.leadMoved, leadMoved(workspace, 0)),
    );
    expect(internal.ordering).toBeUndefined();

    const prefix = uniquePrefix();
    const bus = await NatsBus.connect({ url: inject('infra').natsUrl, prefix });
    const relay = new OutboxRelay({ pool, bus, schema: 'relaytest' });
    relay.start();
    const seen = await streamContents(prefix, 4).finally(async () => {
      await relay.stop();
      await bus.drain();
    });
    expect(Object.fromEntries(seen.map((e) => [e.id, e.ordering ?? null]))).toEqual({
      [a.id]: { key: one, seq: 1 },
      [b.id]: { key: one, seq: 2 },
      [elsewhere.id]: { key: other, seq: 1 },
      [internal.id]: null,
    });
  });
  it('deletes published rows once past their retention, a batch at a time, and never an unpublished one', async () => {
    await pool.query('update outbox set published_at = now() where published_at is null');
    const [old1, old2, old3, recent, deadLettered] = await writeEvents(5);
    await pool.query(`update outbox set published_at = now() - interval '2 days' where id = any($1)`, [
      [old1, old2, old3],
    ]);
    await pool.query('update outbox set published_at = now() where id = $1', [recent]);
    await pool.query(`update outbox set failed_at = now() - interval '2 days' where id = $1`, [deadLettered]);
    const bus = await NatsBus.connect({ url: inject('infra').natsUrl, prefix: uniquePrefix() });
    const relay = new OutboxRelay({ pool, bus, schema: 'relaytest', pruneIntervalMs: 50, pruneBatchSize: 2 });
    const mine = async () =>
      (
        await pool.query<{ id: string }>('select id from outbox where id = any($1) order by seq', [
          [old1, old2, old3, recent, deadLettered],
        ])
      ).rows.map((row) => row.id);
    relay.start();
    await waitFor(async () => (await mine()).length === 2, { what: 'the rows past retention pruned' });
    await relay.stop();
    await bus.drain();
    expect(await mine()).toEqual([recent, deadLettered]);
  });

  it('deletes no more of large published rows a statement than its bytes allow, all of them in the end', async () => {
    await pool.query('update outbox set published_at = now() where published_at is null');
    const ids = await writeEvents(6);
    // Some hundred KB each as stored.
    await pool.query(
      `update outbox set published_at = now() - interval '2 days',
              data = jsonb_build_object('filler', (select string_agg(md5(random()::text), '') from generate_series(1, 6000)))
        where id = any($1)`,
      [ids],
    );
    const { rows: sizes } = await pool.query<{ bytes: number }>(
      'select max(pg_column_size(data))::int as bytes from outbox where id = any($1)',
      [ids],
    );
    const deleted: number[] = [];
    const relay = new OutboxRelay({
      pool: watchedPool(pool, (text, rows) => {
        if (text.startsWith('with candidates')) deleted.push(rows);
      }),
      bus: new InProcessBus(),
      schema: 'relaytest',
      pruneBatchBytes: Math.floor(sizes[0]!.bytes * 1.5),
    });
    expect(await relay.prunePublished()).toBeGreaterThanOrEqual(6);
    // Two rows a statement (the second starts under the bound), then the empty one that ends the pass.
    expect(deleted.slice(0, 3)).toEqual([2, 2, 2]);
    expect(deleted.at(-1)).toBe(0);
    expect((await pool.query('select 1 from outbox where id = any($1)', [ids])).rowCount).toBe(0);
  });

  it('publishes rows written before a crash, once each and in order, when the relay comes back', async () => {
    await pool.query('update outbox set published_at = now()');
    const prefix = uniquePrefix();
    const ids = await writeEvents(5);
    // Nothing relayed them: the writer "crashed" before publishing. Now a relay starts.
    const bus = await NatsBus.connect({ url: inject('infra').natsUrl, prefix });
    const relay = new OutboxRelay({ pool, bus, schema: 'relaytest' });
    relay.start();
    const seen = await streamContents(prefix, 5);
    await relay.stop();
    await bus.drain();
    expect(seen.map((e) => e.id)).toEqual(ids);
    expect(seen[0]).toMatchObject({ type: 'lead.moved', data: { to_stage: 's0' } });
    expect(await relay.backlog()).toBe(0);
  });

  it('publishes every event exactly once when the relay is killed between publish and mark', async () => {
    await pool.query('update outbox set published_at = now()');
    const prefix = uniquePrefix();
    const ids = await writeEvents(8);
    const fixture = fileURLToPath(new URL('./fixtures/relay-until-killed.ts', import.meta.url));
    const crashing = startProcess(process.execPath, ['--conditions=source', '--import', 'tsx', fixture], {
      env: {
        ...process.env,
        NATS_URL: inject('infra').natsUrl,
        DATABASE_URL: url,
        BUS_PREFIX: prefix,
        KILL_AFTER: '3',
      },
    });
    const code = await crashing.exited;
    expect(code, crashing.output()).toBeNull(); // killed by a signal, not a clean exit
    const { rows } = await pool.query<{ n: number }>(
      'select count(*)::int as n from outbox where published_at is null',
    );
    expect(rows[0]?.n).toBe(8); // the batch went out whole, and it died before marking any

    const bus = await NatsBus.connect({ url: inject('infra').natsUrl, prefix });
    const relay = new OutboxRelay({ pool, bus, schema: 'relaytest' });
    relay.start();
    const seen = await streamContents(prefix, 8);
    await relay.stop();
    await bus.drain();
    expect(seen.map((e) => e.id)).toEqual(ids);
  });

  it('keeps the order of writing when transactions commit out of order', async () => {
    await pool.query('update outbox set published_at = now()');
    const prefix = uniquePrefix();
    const workspace = randomUUID();
    const early = await pool.connect();
    await early.query('begin');
    const first = await writeEvent(early, eventTypes.leadMoved, leadMoved(workspace, 1));
    const second = await withTransaction(pool, (client) =>
      writeEvent(client, eventTypes.leadMoved, leadMoved(workspace, 2)),
    );
    const bus = await NatsBus.connect({ url: inject('infra').natsUrl, prefix });
    const relay = new OutboxRelay({ pool, bus, schema: 'relaytest', pollIntervalMs: 20 });
    relay.start();
    // The later-written event is committed, but the earlier one is not: nothing may leave yet.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(await relay.backlog()).toBe(1);
    await early.query('commit');
    early.release();
    relay.wake();
    const seen = await streamContents(prefix, 2);
    await relay.stop();
    await bus.drain();
    expect(seen.map((e) => e.id)).toEqual([first.id, second.id]);
  });

  it('lets only one replica relay at a time, keeping the order', async () => {
    await pool.query('update outbox set published_at = now()');
    const prefix = uniquePrefix();
    const ids = await writeEvents(30);
    const buses = await Promise.all(
      [1, 2, 3].map(() => NatsBus.connect({ url: inject('infra').natsUrl, prefix })),
    );
    const relays = buses.map(
      (bus) => new OutboxRelay({ pool, bus, schema: 'relaytest', batchSize: 4, pollIntervalMs: 20 }),
    );
    for (const relay of relays) relay.start();
    const seen = await streamContents(prefix, 30);
    await Promise.all(relays.map((relay) => relay.stop()));
    await Promise.all(buses.map((bus) => bus.drain()));
    expect(seen.map((e) => e.id)).toEqual(ids);
  });

  it('refuses, at the write, an event larger than the bound', async () => {
    const workspace = randomUUID();
    const written = withTransaction(pool, (client) =>
      writeEvent(client, eventTypes.leadMoved, leadMoved(workspace, 0, 'x'.repeat(maxEventBytes))),
    );
    await expect(written).rejects.toBeInstanceOf(EventTooLarge);
    await expect(written).rejects.toThrow(/over the outbox's bound/);
    const { rows } = await pool.query('select 1 from outbox where workspace_id = $1', [workspace]);
    expect(rows).toHaveLength(0);
  });

  it('sets aside a row larger than the broker carries and publishes the rows behind it', async () => {
    await pool.query('update outbox set published_at = now()');
    const prefix = uniquePrefix();
    const before = await writeEvents(1);
    // A row from before the bound existed, over NATS's 1 MiB max_payload: written with SQL directly.
    const big = randomUUID();
    const bigWorkspace = randomUUID();
    await pool.query(
      `insert into outbox (id, type, workspace_id, occurred_at, data) values ($1, 'thing.made', $2, now(), $3)`,
      [big, bigWorkspace, { blob: 'x'.repeat(1_100_000) }],
    );
    const after = await writeEvents(3);
    const alerts: Array<Record<string, unknown>> = [];
    const bus = await NatsBus.connect({ url: inject('infra').natsUrl, prefix });
    const relay = new OutboxRelay({
      pool,
      bus,
      schema: 'relaytest',
      logger: { error: (fields) => alerts.push(fields) },
    });
    relay.start();
    const seen = await streamContents(prefix, 4);
    await relay.stop();
    await bus.drain();
    expect(seen.map((e) => e.id)).toEqual([...before, ...after]);
    const { rows } = await pool.query(
      'select published_at, failed_at, publish_error, publish_attempts from outbox where id = $1',
      [big],
    );
    expect(rows[0]).toMatchObject({ published_at: null, failed_at: expect.any(Date), publish_attempts: 1 });
    expect(rows[0].publish_error).toMatch(/max_payload/);
    expect(alerts).toEqual([
      expect.objectContaining({
        event_id: big,
        event_type: 'thing.made',
        workspace_id: bigWorkspace,
        schema: 'relaytest',
        reason: 'refused',
      }),
    ]);
    expect(await relay.backlog()).toBe(0);
    expect(await metricsText()).toMatch(/outbox_dead_lettered_total\{[^}]*schema="relaytest"[^}]*\} [1-9]/);
  });

  /** The real bus, with its publish replaced by `publish` (which may call the real one). */
  function withPublish(real: Bus, publish: (event: WireEvent, real: Bus) => Promise<void>): Bus {
    return new Proxy(real, {
      get: (target, key) =>
        key === 'publish' ? (event: WireEvent) => publish(event, target) : Reflect.get(target, key, target),
    });
  }

  it.each([
    ['answers it with an error it has no name for', () => Promise.reject(new Error('unexpected answer'))],
    [
      'throws before it returns a promise at all',
      (): Promise<void> => {
        throw new Error('unexpected answer');
      },
    ],
  ])(
    'sets aside a row that keeps failing while the rows behind it go through: the transport %s',
    async (_how, failing) => {
      await pool.query('update outbox set published_at = now()');
      const prefix = uniquePrefix();
      const [first, poison, ...rest] = await writeEvents(4);
      const real = await NatsBus.connect({ url: inject('infra').natsUrl, prefix });
      // The same one message fails every time; every other goes through.
      const bus = withPublish(real, (event, target) =>
        event.id === poison ? failing() : target.publish(event),
      );
      const relay = new OutboxRelay({ pool, bus, schema: 'relaytest', maxAttempts: 3, pollIntervalMs: 20 });
      relay.start();
      const seen = await streamContents(prefix, 3);
      await waitFor(async () => (await relay.backlog()) === 0, { what: 'the failing row set aside' });
      await relay.stop();
      await real.drain();
      expect(seen.map((e) => e.id)).toEqual([first, ...rest]);
      const { rows } = await pool.query('select failed_at, publish_attempts from outbox where id = $1', [
        poison,
      ]);
      expect(rows[0]).toMatchObject({ failed_at: expect.any(Date), publish_attempts: 3 });
    },
  );

  it('publishes a batch all at once, and settles it as a pass in order would', async () => {
    await pool.query('update outbox set published_at = now()');
    const prefix = uniquePrefix();
    const ids = await writeEvents(5);
    const real = await NatsBus.connect({ url: inject('infra').natsUrl, prefix });
    let underWay = 0;
    let mostUnderWay = 0;
    let failedOnce = false;
    // The broker failing the third event's first publish, with an error it has no name for.
    const bus = withPublish(real, async (event, target) => {
      underWay++;
      mostUnderWay = Math.max(mostUnderWay, underWay);
      try {
        if (event.id === ids[2] && !failedOnce) {
          failedOnce = true;
          await new Promise((resolve) => setTimeout(resolve, 50));
          throw new Error('unexpected answer');
        }
        await target.publish(event);
      } finally {
        underWay--;
      }
    });
    const failures: unknown[] = [];
    const relay = new OutboxRelay({
      pool,
      bus,
      schema: 'relaytest',
      pollIntervalMs: 20,
      onError: (error) => failures.push(error),
    });
    relay.start();
    const seen = await streamContents(prefix, 5);
    await waitFor(async () => (await relay.backlog()) === 0, { what: 'every row marked' });
    await relay.stop();
    await real.drain();
    expect(mostUnderWay).toBe(5);
    // The two behind the failed one reached the stream in the first pass; their second publish, in the
    // pass that carried the third, was dropped as a duplicate of its event id.
    expect(seen.map((e) => e.id)).toEqual([ids[0], ids[1], ids[3], ids[4], ids[2]]);
    expect(failures).toHaveLength(1);
    const { rows } = await pool.query<{ publish_attempts: number }>(
      'select publish_attempts from outbox where id = any($1) order by seq',
      [ids],
    );
    expect(rows.map((r) => r.publish_attempts)).toEqual([0, 0, 1, 0, 0]);
  });

  it('takes its lock with the transaction’s begin, and marks a batch with the commit', async () => {
    await pool.query('update outbox set published_at = now()');
    const prefix = uniquePrefix();
    const ids = await writeEvents(5);
    const counted = createPool({ url, schema: 'relaytest' });
    const sent: string[] = [];
    counted.on('connect', (client) => {
      const query = client.query.bind(client) as (...args: unknown[]) => unknown;
      Object.assign(client, {
        query: (...args: unknown[]) => {
          sent.push(String(args[0]).trim());
          return query(...args);
        },
      });
    });
    const bus = await NatsBus.connect({ url: inject('infra').natsUrl, prefix });
    const relay = new OutboxRelay({ pool: counted, bus, schema: 'relaytest', pollIntervalMs: 60_000 });
    relay.start();
    const seen = await streamContents(prefix, 5);
    await waitFor(
      async () => {
        const { rows } = await pool.query<{ n: number }>(
          'select count(*)::int as n from outbox where published_at is null',
        );
        return rows[0]?.n === 0;
      },
      { what: 'every row marked' },
    );
    // Stopping runs one more pass, which finds nothing.
    await relay.stop();
    await bus.drain();
    await counted.end();
    expect(seen.map((e) => e.id)).toEqual(ids);
    const kinds = sent.map((text) =>
      /^begin; select pg_try_advisory_xact_lock\(hashtext\('outbox:relaytest'\)\) as locked$/.test(text)
        ? 'begin and lock'
        : /^select seq, .*\bfrom outbox\b/s.test(text)
          ? 'read'
          : /^update outbox set published_at = now\(\) where seq = any\('\{[\d,]+\}'::bigint\[\]\); commit$/.test(
                text,
              )
            ? 'mark and commit'
            : text,
    );
    expect(kinds).toEqual(['begin and lock', 'read', 'mark and commit', 'begin and lock', 'read', 'commit']);
  });

  it('sets nothing aside while the broker is unreachable, and publishes everything in order once it is back', async () => {
    await pool.query('update outbox set published_at = now()');
    const prefix = uniquePrefix();
    const ids = await writeEvents(3);
    const gone = await NatsBus.connect({ url: inject('infra').natsUrl, prefix });
    await gone.drain();
    const failures: unknown[] = [];
    const stalled = new OutboxRelay({
      pool,
      bus: gone,
      schema: 'relaytest',
      maxAttempts: 1,
      pollIntervalMs: 20,
      onError: (error) => failures.push(error),
    });
    stalled.start();
    await waitFor(() => failures.length >= 3, { what: 'three failed passes' });
    await stalled.stop();
    const { rows } = await pool.query<{ failed: boolean; publish_attempts: number }>(
      'select failed_at is not null as failed, publish_attempts from outbox where id = any($1) order by seq',
      [ids],
    );
    expect(rows.map((r) => r.failed)).toEqual([false, false, false]);
    // Each pass stopped at the first row: the ones behind it count as not tried (no attempt recorded).
    expect(rows[0]!.publish_attempts).toBeGreaterThanOrEqual(3);
    expect(rows.slice(1).map((r) => r.publish_attempts)).toEqual([0, 0]);

    const bus = await NatsBus.connect({ url: inject('infra').natsUrl, prefix });
    const relay = new OutboxRelay({ pool, bus, schema: 'relaytest' });
    relay.start();
    const seen = await streamContents(prefix, 3);
    await relay.stop();
    await bus.drain();
    expect(seen.map((e) => e.id)).toEqual(ids);
  });
});
