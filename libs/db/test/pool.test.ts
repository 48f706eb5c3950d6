import { createDatabase, startPostgres, waitFor } from '@inbox/testkit';
import { describe, expect, inject, it } from 'vitest';
import { createPool } from '../src/index.js';
import { connectWithoutTimeouts } from '../src/pool.js';

describe('createPool', () => {
  it('survives the database going away under a checked-out client', async () => {
    const server = await startPostgres();
    const pool = createPool({ url: server.url, schema: 'public' });
    const client = await pool.connect();
    await client.query('select 1');
    const unhandled: unknown[] = [];
    const onUncaught = (error: unknown) => unhandled.push(error);
    process.on('uncaughtException', onUncaught);
    try {
      await server.stop();
      await expect(client.query('select 1')).rejects.toThrow();
      expect(unhandled).toEqual([]);
    } finally {
      process.off('uncaughtException', onUncaught);
      client.release(true);
      await pool.end().catch(() => undefined);
    }
  });

  it('prepares each parameterised statement once per connection, by pool and by client alike', async () => {
    const pool = createPool({
      url: await createDatabase(inject('infra').postgresAdminUrl),
      schema: 'public',
      max: 1,
    });
    try {
      const text = 'select $1::int + 1 as n';
      for (let i = 0; i < 3; i++) expect((await pool.query<{ n: number }>(text, [i])).rows[0]!.n).toBe(i + 1);
      const client = await pool.connect();
      try {
        expect((await client.query<{ n: number }>(text, [41])).rows[0]!.n).toBe(42);
        const { rows } = await client.query<{ name: string; statement: string; calls: number }>(
          'select name, statement, generic_plans + custom_plans as calls from pg_prepared_statements',
        );
        // Named by verb and digest, as traces show it.
        expect(rows).toEqual([
          { name: expect.stringMatching(/^select:[0-9a-f]{12}$/), statement: text, calls: 4 },
        ]);
      } finally {
        client.release();
      }
    } finally {
      await pool.end();
    }
  });

  it("answers a prepared statement's result and refusal as pg answers any query, promise or callback", async () => {
    const pool = createPool({
      url: await createDatabase(inject('infra').postgresAdminUrl),
      schema: 'public',
      max: 1,
    });
    const client = await pool.connect();
    try {
      const text = 'select 10 / $1::int as n';
      expect((await client.query<{ n: number }>(text, [2])).rows).toEqual([{ n: 5 }]);
      // Postgres's refusal, with its SQLSTATE, and a stack that leads back here rather than into the socket.
      const refused = await client.query(text, [0]).then(
        () => undefined,
        (error: Error & { code?: string }) => error,
      );
      expect(refused?.code).toBe('22012');
      expect(refused?.stack).toMatch(/pool\.test\.ts/);
      const viaCallback = (values: unknown[]) =>
        new Promise<{ error: (Error & { code?: string }) | null; rows?: unknown[] }>((resolve) => {
          client.query(text, values, (error: Error | null, result?: { rows: unknown[] }) =>
            resolve({ error, rows: result?.rows }),
          );
        });
      expect(await viaCallback([5])).toEqual({ error: null, rows: [{ n: 2 }] });
      expect((await viaCallback([0])).error?.code).toBe('22012');
      // The client stays usable, and the statement stays prepared once.
      const { rows } = await client.query('select count(*)::int as n from pg_prepared_statements');
      expect(rows).toEqual([{ n: 1 }]);
    } finally {
      client.release();
      await pool.end();
    }
  });

  it('gives every session a statement timeout and an idle-in-transaction timeout by default', async () => {
    const pool = createPool({
      url: await createDatabase(inject('infra').postgresAdminUrl),
      schema: 'public',
    });
    try {
      const { rows } = await pool.query<{ statement: string; idle: string }>(
        "select current_setting('statement_timeout') as statement, current_setting('idle_in_transaction_session_timeout') as idle",
      );
      expect(rows[0]).toEqual({ statement: '15s', idle: '30s' });
    } finally {
      await pool.end();
    }
  });

  it('cancels a statement that runs past the statement timeout', async () => {
    const pool = createPool({
      url: await createDatabase(inject('infra').postgresAdminUrl),
      schema: 'public',
      statementTimeoutMs: 200,
    });
    try {
      const started = Date.now();
      await expect(pool.query('select pg_sleep(5)')).rejects.toMatchObject({ code: '57014' });
      expect(Date.now() - started).toBeLessThan(3_000);
      // The connection is fine afterwards and goes back to work.
      expect((await pool.query('select 1 as one')).rows).toEqual([{ one: 1 }]);
    } finally {
      await pool.end();
    }
  });

  it('ends a session left idle inside a transaction', async () => {
    const url = await createDatabase(inject('infra').postgresAdminUrl);
    const pool = createPool({ url, schema: 'public', idleInTransactionTimeoutMs: 200 });
    const observer = createPool({ url, schema: 'public' });
    const client = await pool.connect();
    try {
      await client.query('begin');
      const { rows } = await client.query<{ pid: number }>('select pg_backend_pid() as pid');
      const pid = rows[0]!.pid;
      await waitFor(
        async () =>
          (await observer.query('select 1 from pg_stat_activity where pid = $1', [pid])).rowCount === 0,
        { timeoutMs: 5_000, what: 'the idle-in-transaction session to be ended' },
      );
      await expect(client.query('select 1')).rejects.toThrow();
    } finally {
      client.release(true);
      await Promise.all([pool.end(), observer.end()]);
    }
  });

  it('lifts the limits for a session that must run long, without handing them back to the pool', async () => {
    const pool = createPool({
      url: await createDatabase(inject('infra').postgresAdminUrl),
      schema: 'public',
      max: 1,
      statementTimeoutMs: 200,
    });
    try {
      const client = await connectWithoutTimeouts(pool);
      await client.query('select pg_sleep(0.4)');
      client.release();
      await expect(pool.query('select pg_sleep(0.4)')).rejects.toMatchObject({ code: '57014' });
    } finally {
      await pool.end();
    }
  });
});
