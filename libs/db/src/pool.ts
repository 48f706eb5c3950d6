import { createHash } from 'node:crypto';
import { context } from '@opentelemetry/api';
import pg from 'pg';
import { observePool } from './pool-gauges.js';
import {
  type ConnectionAttributes,
  inOperation,
  operationOf,
  type StatementIdentity,
  startStatement,
} from './statement-telemetry.js';

// bigint counts and ids come back as strings by default; our bigints (outbox sequence) fit in a number.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));

const statements = new Map<string, StatementIdentity>();

/**
 * A name per distinct statement text, so each connection parses and plans it once. The name is what
 * traces show for the statement (its span's name), so it starts with the statement's verb and first
 * table: `insert:messages:3fa9c2d41b07`.
 */
function preparedStatement(text: string): StatementIdentity {
  let statement = statements.get(text);
  if (!statement) {
    const operation = operationOf(text);
    const table = /\b(?:from|into|update)\s+([a-z_][a-z0-9_.]*)/i.exec(text)?.[1]?.toLowerCase();
    const digest = createHash('sha1').update(text).digest('hex').slice(0, 12);
    const verb = operation.toLowerCase();
    statement = { text, operation, name: table ? `${verb}:${table}:${digest}` : `${verb}:${digest}` };
    // Statement texts are the code's own and few; the bound is a guard against one built per call.
    if (statements.size < 10_000) statements.set(text, statement);
  }
  return statement;
}

/**
 * A client that prepares every parameterised statement under a name, once per connection: Postgres then
 * skips parsing, and mostly planning, on each later run (its generic plan), which on the send path is a
 * large part of the database's CPU. Statements without parameters (transaction control, migrations'
 * scripts with several statements) go as they are. A statement run inside an operation is traced and
 * timed (statement-telemetry.ts).
 */
class PreparingClient extends pg.Client {
  connectionAttributes?: ConnectionAttributes;
}
const plainQuery = pg.Client.prototype.query as (...args: unknown[]) => unknown;

type QueryCallback = (error: Error | null, result: unknown) => void;

/**
 * A named statement as pg's Query built from its text: given a config object instead, pg copies it
 * property descriptor by property descriptor before reading it (`normalizeQueryConfig` in pg 8.23),
 * about 1 µs a statement against 0.08 µs from a text, for the same query (bench/RESULTS.md, sixteenth
 * session). A Query handed to `query()` is run as it is and answered through its callback, so a caller
 * without one gets the promise pg would have given it, with the caller's stack on a failure as pg gives.
 */
function runNamed(
  client: pg.Client,
  text: string,
  values: unknown[],
  name: string,
  callback: unknown,
): unknown {
  // pg's types leave out the fields a Query is run by; these two are set as pg itself sets them.
  const query = new pg.Query(text, values) as unknown as { name: string; callback: QueryCallback };
  query.name = name;
  if (typeof callback === 'function') {
    query.callback = callback as QueryCallback;
    return plainQuery.call(client, query);
  }
  return new Promise((resolve, reject) => {
    query.callback = (error: Error | null, result: unknown) => (error ? reject(error) : resolve(result));
    plainQuery.call(client, query);
  }).catch((error: Error) => {
    Error.captureStackTrace(error);
    throw error;
  });
}

// Assigned rather than declared with `override`: pg's overloads of `query` cannot be restated in a subclass.
(PreparingClient.prototype as unknown as { query: (...args: unknown[]) => unknown }).query = function (
  this: PreparingClient,
  ...args: unknown[]
) {
  const [text, values] = args;
  if (typeof text !== 'string') return plainQuery.apply(this, args);
  const prepared = Array.isArray(values) && values.length > 0 ? preparedStatement(text) : undefined;
  const run = (...runArgs: unknown[]) =>
    prepared
      ? runNamed(this, text, values as unknown[], prepared.name!, runArgs[2])
      : plainQuery.apply(this, runArgs);
  if (!inOperation()) return run(...args);
  const statement = prepared ?? { text, name: undefined, operation: operationOf(text) };
  this.connectionAttributes ??= connectionAttributes(this);
  const end = startStatement(statement, this.connectionAttributes);
  const last = args.length - 1;
  const callback = args[last];
  if (typeof callback === 'function') {
    args[last] = (error: unknown, result: unknown) => {
      end(error);
      callback(error, result);
    };
    return run(...args);
  }
  const result = run(...args) as Promise<unknown>;
  result.then(() => end(undefined), end);
  return result;
};

function connectionAttributes(client: pg.Client): ConnectionAttributes {
  const { host, port, database } = (
    client as unknown as { connectionParameters: { host: string; port: number; database: string } }
  ).connectionParameters;
  return {
    'db.system.name': 'postgresql',
    'db.namespace': database,
    'server.address': host,
    'server.port': port,
  };
}

/**
 * A pool whose waiting checkouts resume in their caller's context: when every connection is busy, a
 * checkout's callback runs from whichever query frees one, and its statement would otherwise be traced
 * under that other operation.
 */
class ContextKeepingPool extends pg.Pool {}
const plainConnect = pg.Pool.prototype.connect as (...args: unknown[]) => unknown;
(ContextKeepingPool.prototype as unknown as { connect: (...args: unknown[]) => unknown }).connect = function (
  this: pg.Pool,
  callback?: unknown,
) {
  if (typeof callback !== 'function' || !inOperation()) return plainConnect.call(this, callback);
  return plainConnect.call(this, context.bind(context.active(), callback as (...args: unknown[]) => unknown));
};

export type Pool = pg.Pool;
export type PoolClient = pg.PoolClient;
export type Queryable = Pick<pg.Pool, 'query'> | Pick<pg.PoolClient, 'query'>;

export interface PoolOptions {
  url: string;
  /** The service's own schema: it becomes the search path, so queries need not repeat it. */
  schema: string;
  max?: number;
  applicationName?: string;
  /** A statement running longer is cancelled by the server (0 turns the limit off). */
  statementTimeoutMs?: number;
  /** A session left idle inside an open transaction longer is ended by the server (0: off). */
  idleInTransactionTimeoutMs?: number;
}

/**
 * A connection pool for one service schema. Every session carries server-side time limits: one slow
 * query or one transaction left open by a stuck handler would otherwise hold a connection, and the
 * locks it took, for good, and a pool of ten is soon exhausted.
 */
export function createPool({
  url,
  schema,
  max = 10,
  applicationName,
  statementTimeoutMs = 15_000,
  idleInTransactionTimeoutMs = 30_000,
}: PoolOptions): pg.Pool {
  assertIdentifier(schema);
  const pool = new ContextKeepingPool({
    Client: PreparingClient,
    connectionString: url,
    max,
    application_name: applicationName ?? schema,
    options: `-c search_path=${schema}`,
    statement_timeout: statementTimeoutMs,
    idle_in_transaction_session_timeout: idleInTransactionTimeoutMs,
    connectionTimeoutMillis: 5_000,
    idleTimeoutMillis: 30_000,
  });
  // A client losing its connection (a database restart, a failover, Ctrl-C reaching an embedded
  // Postgres) must not crash the process: the pool replaces idle ones, and a query in flight on a
  // checked-out one rejects where it is awaited. Without a listener, the client's 'error' event would
  // be unhandled and end the process.
  pool.on('error', () => undefined);
  pool.on('connect', (client) => {
    client.on('error', () => undefined);
  });
  observePool(pool, applicationName ?? schema);
  return pool;
}

/**
 * A session of the pool without its time limits, for work that legitimately runs long: migrations wait
 * for another replica's migrations and may build indexes on big tables. The connection is closed when
 * released, so the lifted limits never reach another user of the pool.
 */
export async function connectWithoutTimeouts(pool: pg.Pool): Promise<pg.PoolClient> {
  const client = await pool.connect();
  try {
    await client.query('set statement_timeout to 0; set idle_in_transaction_session_timeout to 0');
  } catch (error) {
    client.release(true);
    throw error;
  }
  const release = client.release.bind(client);
  client.release = () => release(true);
  return client;
}

export function assertIdentifier(name: string): void {
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`"${name}" is not a safe SQL identifier`);
}

export async function isReachable(pool: pg.Pool): Promise<boolean> {
  try {
    await pool.query('select 1');
    return true;
  } catch {
    return false;
  }
}
