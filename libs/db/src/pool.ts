import pg from 'pg';

// bigint counts and ids come back as strings by default; our bigints (outbox sequence) fit in a number.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));

export type Pool = pg.Pool;
export type PoolClient = pg.PoolClient;
export type Queryable = Pick<pg.Pool, 'query'> | Pick<pg.PoolClient, 'query'>;

export interface PoolOptions {
  url: string;
  /** The service's own schema: it becomes the search path, so queries need not repeat it. */
  schema: string;
  max?: number;
  applicationName?: string;
}

export function createPool({ url, schema, max = 10, applicationName }: PoolOptions): pg.Pool {
  assertIdentifier(schema);
  const pool = new pg.Pool({
    connectionString: url,
    max,
    application_name: applicationName ?? schema,
    options: `-c search_path=${schema}`,
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
  return pool;
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
