import { randomBytes } from 'node:crypto';
import { createDatabase, waitFor } from '@inbox/testkit';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createPool, type Pool, TurnBatch } from '../src/index.js';

// Calls of one turn of the event loop share a statement; a row that breaks the statement fails its own
// call only; anything else fails the batch's calls together. Against a real table, with a constraint a
// caller's row can break.

let pool: Pool;

beforeAll(async () => {
  pool = createPool({ url: await createDatabase(inject('infra').postgresAdminUrl), schema: 'turnbatch' });
  await pool.query('create schema if not exists turnbatch');
  await pool.query(
    'create table turnbatch.notes (id int primary key, body text not null check (body <> $$$$))',
  );
  // An index entry has a size limit (about 2.7 KB) a caller's row can break too.
  await pool.query('create index notes_by_body on turnbatch.notes (body)');
});
afterAll(async () => {
  await pool.end();
});

interface Note {
  id: number;
  body: string;
}

/** A batch of notes written with their ids answered, counting the statements each way runs. */
function noteBatch(maxItems?: number) {
  const ran = { batches: [] as number[], alone: 0 };
  const batch = new TurnBatch<Note, number>({
    maxItems,
    runAlone: async (note) => {
      ran.alone++;
      const { rows } = await pool.query<{ id: number }>(
        'insert into notes (id, body) values ($1, $2) returning id',
        [note.id, note.body],
      );
      return rows[0]!.id * 10;
    },
    runBatch: async (notes) => {
      ran.batches.push(notes.length);
      const { rows } = await pool.query<{ id: number }>(
        'insert into notes (id, body) select * from unnest($1::int[], $2::text[]) returning id',
        [notes.map((n) => n.id), notes.map((n) => n.body)],
      );
      const written = new Set(rows.map((row) => row.id));
      return notes.map((n) => (written.has(n.id) ? n.id * 10 : -1));
    },
  });
  return { batch, ran };
}

const stored = async (ids: number[]) =>
  (await pool.query<{ id: number }>('select id from notes where id = any($1) order by id', [ids])).rows.map(
    (row) => row.id,
  );

describe('TurnBatch', () => {
  it('runs the calls of one turn as one statement, each answered with its own result', async () => {
    const { batch, ran } = noteBatch();
    const answers = await Promise.all([1, 2, 3, 4].map((id) => batch.run({ id, body: `n${id}` })));
    expect(answers).toEqual([10, 20, 30, 40]);
    expect(ran).toEqual({ batches: [4], alone: 0 });
    expect(await stored([1, 2, 3, 4])).toEqual([1, 2, 3, 4]);
  });

  it('runs a call alone when its turn brings no other, and calls of later turns in batches of their own', async () => {
    const { batch, ran } = noteBatch();
    expect(await batch.run({ id: 11, body: 'alone' })).toBe(110);
    const later = await Promise.all([12, 13].map((id) => batch.run({ id, body: 'pair' })));
    expect(later).toEqual([120, 130]);
    expect(ran).toEqual({ batches: [2], alone: 1 });
  });

  it('runs a lone call, and each call of a batch a row broke, through the batch statement when given no other', async () => {
    const batches: number[] = [];
    const batch = new TurnBatch<Note, number>({
      runBatch: async (notes) => {
        batches.push(notes.length);
        const { rows } = await pool.query<{ id: number }>(
          'insert into notes (id, body) select * from unnest($1::int[], $2::text[]) returning id',
          [notes.map((n) => n.id), notes.map((n) => n.body)],
        );
        return rows.map((row) => row.id * 10);
      },
    });
    expect(await batch.run({ id: 41, body: 'alone' })).toBe(410);
    const settled = await Promise.allSettled([
      batch.run({ id: 42, body: 'fine' }),
      batch.run({ id: 43, body: '' }),
    ]);
    expect(settled[0]).toEqual({ status: 'fulfilled', value: 420 });
    expect(settled[1]).toMatchObject({ status: 'rejected', reason: { code: '23514' } });
    expect(batches).toEqual([1, 2, 1, 1]);
    expect(await stored([41, 42, 43])).toEqual([41, 42]);
  });

  it('never makes a batch larger than its bound', async () => {
    const { batch, ran } = noteBatch(3);
    const ids = [21, 22, 23, 24, 25, 26, 27];
    expect(await Promise.all(ids.map((id) => batch.run({ id, body: 'bounded' })))).toEqual(
      ids.map((id) => id * 10),
    );
    expect(ran.batches).toEqual([3, 3]);
    expect(ran.alone).toBe(1);
  });

  it("fails only the call whose row breaks the statement: the turn's other calls are written", async () => {
    const { batch, ran } = noteBatch();
    const settled = await Promise.allSettled([
      batch.run({ id: 31, body: 'fine' }),
      batch.run({ id: 32, body: '' }),
      batch.run({ id: 33, body: 'fine too' }),
    ]);
    expect(settled[0]).toEqual({ status: 'fulfilled', value: 310 });
    expect(settled[1]).toMatchObject({ status: 'rejected', reason: { code: '23514' } });
    expect(settled[2]).toEqual({ status: 'fulfilled', value: 330 });
    expect(ran).toEqual({ batches: [3], alone: 3 });
    expect(await stored([31, 32, 33])).toEqual([31, 33]);
  });

  it("fails only the call whose row is too large for an index entry: the turn's other calls are written", async () => {
    const { batch, ran } = noteBatch();
    // Random bytes, so that compression cannot bring the entry under the limit.
    const huge = randomBytes(6_000).toString('base64');
    const settled = await Promise.allSettled([
      batch.run({ id: 51, body: 'fine' }),
      batch.run({ id: 52, body: huge }),
    ]);
    expect(settled[0]).toEqual({ status: 'fulfilled', value: 510 });
    expect(settled[1]).toMatchObject({ status: 'rejected', reason: { code: '54000' } });
    expect(ran).toEqual({ batches: [2], alone: 2 });
    expect(await stored([51, 52])).toEqual([51]);
  });

  it('runs each call again alone when the batch deadlocks with another transaction', async () => {
    await pool.query("insert into notes (id, body) values (1001, 'a'), (1002, 'b')");
    const holder = await pool.connect();
    const batch = new TurnBatch<number, number>({
      // Takes its rows' locks one after another: 1001, then 1002, which the holder has.
      runBatch: async (ids) => {
        const client = await pool.connect();
        try {
          // The batch is the one to find the deadlock, however long the holder takes to close the
          // circle: Postgres looks for one once, deadlock_timeout after a wait begins.
          await client.query(`set deadlock_timeout = '3s'`);
          const { rows } = await client.query<{ id: number }>(
            `update notes set body = body || '!' where id in (select unnest($1::int[]) order by 1) returning id`,
            [ids],
          );
          return ids.map((id) => (rows.some((row) => row.id === id) ? id : -1));
        } finally {
          await client.query('reset deadlock_timeout');
          client.release();
        }
      },
    });
    try {
      await holder.query(`set deadlock_timeout = '60s'`);
      await holder.query('begin');
      await holder.query("update notes set body = body || '?' where id = 1002");
      const settled = Promise.allSettled([batch.run(1001), batch.run(1002)]);
      await waitFor(
        async () =>
          (
            await pool.query(
              `select 1 from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`,
            )
          ).rowCount === 1,
        { what: 'the batch to wait on the holder’s row' },
      );
      // The holder now wants the batch's first row: a deadlock, which the batch (waiting longer) is told of.
      await holder.query("update notes set body = body || '?' where id = 1001");
      await holder.query('commit');
      expect((await settled).map((s) => s.status)).toEqual(['fulfilled', 'fulfilled']);
    } finally {
      await holder.query('reset deadlock_timeout');
      holder.release();
    }
    const { rows } = await pool.query('select id, body from notes where id in (1001, 1002) order by id');
    // Each update once. Which of the holder and the call run again alone updates row 1001 first is
    // Postgres's to choose: the rolled-back batch's lock is gone for both at once.
    expect(['a?!', 'a!?']).toContain(rows[0]?.body);
    expect(rows[1]).toEqual({ id: 1002, body: 'b?!' });
  });

  it('fails every call of the batch together when the statement fails for no row of its own', async () => {
    const ran = { alone: 0 };
    const batch = new TurnBatch<number, number>({
      runAlone: async () => {
        ran.alone++;
        return 0;
      },
      // Cancelled by the server (57014): the connection's fault, not a row's, so nothing is run again.
      runBatch: async (items) => {
        const client = await pool.connect();
        try {
          await client.query('set statement_timeout = 50');
          await client.query('select pg_sleep(1)');
          return items;
        } finally {
          await client.query('reset statement_timeout');
          client.release();
        }
      },
    });
    const settled = await Promise.allSettled([batch.run(1), batch.run(2)]);
    expect(settled.map((s) => s.status)).toEqual(['rejected', 'rejected']);
    expect(settled[0]).toMatchObject({ reason: { code: '57014' } });
    expect(ran.alone).toBe(0);
  });

  it('refuses a batch whose statement answers a different number of results than it had calls', async () => {
    const batch = new TurnBatch<number, number>({
      runAlone: async (n) => n,
      runBatch: async (items) => items.slice(1),
    });
    const settled = await Promise.allSettled([batch.run(1), batch.run(2)]);
    expect(settled).toMatchObject([
      { status: 'rejected', reason: { message: 'a batch of 2 answered 1 results' } },
      { status: 'rejected', reason: { message: 'a batch of 2 answered 1 results' } },
    ]);
  });
});
