import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { NatsBus } from '@inbox/bus';
import type { EventEnvelope } from '@inbox/contracts';
import { createDatabase, startProcess, uniquePrefix, waitFor } from '@inbox/testkit';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createPool, migrate, OutboxRelay, type Pool, withTransaction, writeEvent } from '../src/index.js';

const migrations = fileURLToPath(new URL('./fixtures/migrations', import.meta.url));
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
    expect(results.flat()).toEqual(['001_things.sql', '002_things_index.sql']);
    const again = await migrate(pools[0]!, { schema: 'concurrent', directory: migrations });
    expect(again).toEqual([]);
    const { rows } = await pools[0]!.query('select version from schema_migrations order by version');
    expect(rows.map((r) => r.version)).toEqual([1, 2]);
    await Promise.all(pools.map((p) => p.end()));
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
        ids.push((await writeEvent(client, { type: 'thing.made', workspace_id: workspace, data: { i } })).id);
      });
    }
    return ids;
  }

  async function streamContents(prefix: string, expected: number): Promise<EventEnvelope[]> {
    const reader = await NatsBus.connect({ url: inject('infra').natsUrl, prefix });
    const seen: EventEnvelope[] = [];
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
        await writeEvent(client, { type: 'thing.made', workspace_id: workspace, data: {} });
        throw new Error('state change failed');
      }),
    ).rejects.toThrow('state change failed');
    const { rows } = await pool.query('select 1 from outbox where workspace_id = $1', [workspace]);
    expect(rows).toHaveLength(0);
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
    expect(seen[0]).toMatchObject({ type: 'thing.made', data: { i: 0 } });
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
    expect(rows[0]?.n).toBe(8); // three were published, none was marked

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
    const first = await writeEvent(early, { type: 'thing.made', workspace_id: workspace, data: { n: 1 } });
    const second = await withTransaction(pool, (client) =>
      writeEvent(client, { type: 'thing.made', workspace_id: workspace, data: { n: 2 } }),
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
});
