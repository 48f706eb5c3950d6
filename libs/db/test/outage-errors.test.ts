import { isOutage } from '@inbox/bus';
import { AppError } from '@inbox/contracts';
import { createDatabase } from '@inbox/testkit';
import pg from 'pg';
import { expect, inject, it } from 'vitest';
import { createPool } from '../src/index.js';

// What the bus waits out in place (libs/bus outage.ts), as pg and our own services really fail.

it('takes a database that cannot be reached, or that ends the connection, for an outage', async () => {
  const refused = createPool({ url: 'postgres://postgres@127.0.0.1:1/none', schema: 'x' });
  const error = await refused.query('select 1').catch((failure: unknown) => failure);
  await refused.end();
  expect(isOutage(error)).toBe(true);

  // A pool whose connections are all taken, waiting past its checkout timeout.
  const url = await createDatabase(inject('infra').postgresAdminUrl);
  const busy = new pg.Pool({ connectionString: url, max: 1, connectionTimeoutMillis: 100 });
  const held = await busy.connect();
  const timedOut = await busy.query('select 1').catch((failure: unknown) => failure);
  expect(isOutage(timedOut)).toBe(true);

  // The server ends the connection under the statement (57P01, as in a shutdown or failover).
  const killer = createPool({ url, schema: 'public', max: 1 });
  const pid = (await held.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid;
  const killed = held.query('select pg_sleep(5)').catch((failure: unknown) => failure);
  await new Promise((resolve) => setTimeout(resolve, 100));
  await killer.query('select pg_terminate_backend($1)', [pid]);
  expect(isOutage(await killed)).toBe(true);
  held.release(true);
  await Promise.all([busy.end(), killer.end()]);
});

it("does not take the event's own faults for an outage", async () => {
  const url = await createDatabase(inject('infra').postgresAdminUrl);
  const pool = createPool({ url, schema: 'public' });
  const constraint = await pool.query("select 'x'::int").catch((failure: unknown) => failure);
  await pool.end();
  expect(isOutage(constraint)).toBe(false);
  expect(isOutage(new Error('cannot handle'))).toBe(false);
  expect(isOutage(AppError.badRequest('no'))).toBe(false);
  expect(isOutage(AppError.internal())).toBe(false);
  // A service of ours that is not answering its command.
  expect(isOutage(AppError.unavailable(new Error('no responders')))).toBe(true);
});
