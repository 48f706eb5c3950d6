import { isOutage, UnreadableEvent } from '@inbox/bus';
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
  expect(error).toMatchObject({ code: 'ECONNREFUSED' });
  expect(isOutage(error)).toBe(true);

  // A pool whose connections are all taken, waiting past its checkout timeout.
  const url = await createDatabase(inject('infra').postgresAdminUrl);
  const busy = new pg.Pool({ connectionString: url, max: 1, connectionTimeoutMillis: 100 });
  const held = await busy.connect();
  const timedOut = await busy.query('select 1').catch((failure: unknown) => failure);
  expect(timedOut).toMatchObject({ message: 'timeout exceeded when trying to connect' });
  expect(isOutage(timedOut)).toBe(true);

  // The server ends the connection under the statement (57P01, as in a shutdown or failover).
  const killer = createPool({ url, schema: 'public', max: 1 });
  const pid = (await held.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid;
  // The ended connection may also be reported as an 'error' of the checked-out client, after the
  // statement's own: with no listener that is an uncaught exception, whichever comes first.
  held.on('error', () => undefined);
  const killed = held.query('select pg_sleep(5)').catch((failure: unknown) => failure);
  await new Promise((resolve) => setTimeout(resolve, 100));
  await killer.query('select pg_terminate_backend($1)', [pid]);
  const terminated = await killed;
  expect(terminated).toMatchObject({ code: '57P01' });
  expect(isOutage(terminated)).toBe(true);
  held.release(true);
  await Promise.all([busy.end(), killer.end()]);
});

it("does not take the handler's or the event's own faults for an outage", async () => {
  const url = await createDatabase(inject('infra').postgresAdminUrl);
  const pool = createPool({ url, schema: 'public', max: 1 });
  // A value the statement refuses, quoting words an outage would say (22P02).
  const invalid = await pool
    .query('select $1::int', ['Connection terminated unexpectedly'])
    .catch((failure: unknown) => failure);
  expect(invalid).toMatchObject({ code: '22P02' });
  expect(isOutage(invalid)).toBe(false);
  // The handler's own slow statement (57014).
  const client = await pool.connect();
  await client.query("set statement_timeout = '20ms'");
  const slow = await client.query('select pg_sleep(1)').catch((failure: unknown) => failure);
  client.release(true);
  expect(slow).toMatchObject({ code: '57014' });
  expect(isOutage(slow)).toBe(false);
  await pool.end();
  // A session the server ended for idling in its transaction (25P03): the handler held it too long.
  const idle = new pg.Client({ connectionString: url });
  await idle.connect();
  const ended = new Promise((resolve) => idle.once('error', resolve));
  await idle.query("set idle_in_transaction_session_timeout = '50ms'");
  await idle.query('begin');
  const endedWith = await ended;
  const after = await idle.query('select 1').catch((failure: unknown) => failure);
  await idle.end().catch(() => undefined);
  expect(endedWith).toMatchObject({ code: '25P03' });
  expect(isOutage(endedWith)).toBe(false);
  expect(isOutage(after)).toBe(false);
  // An event its schema cannot read, whose complaint quotes a refused connection.
  expect(isOutage(new UnreadableEvent('message.sent', new Error('ECONNREFUSED')))).toBe(false);
  expect(isOutage(new Error('cannot handle'))).toBe(false);
  expect(isOutage(AppError.badRequest('no'))).toBe(false);
  expect(isOutage(AppError.internal())).toBe(false);
  // A service of ours that is not answering its command.
  expect(isOutage(AppError.unavailable(new Error('no responders')))).toBe(true);
});
