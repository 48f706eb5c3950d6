import { fileURLToPath } from 'node:url';
import type { Pool } from '@inbox/db';
import { createDatabase } from './local-servers.js';

export interface MigratedPoolOptions {
  /** The run's Postgres, as an administrator: a database of its own is created there. */
  adminUrl: string;
  /** The service's schema, which its migrations create. */
  schema: string;
  /** The service's migrations folder. */
  migrations: URL;
  /** Also the transactional outbox, as services that publish events have. */
  outbox?: boolean;
  /** The pool's size. */
  max?: number;
}

/** A pool on a fresh database of the run's Postgres, with a service's schema migrated as it leaves it. */
export async function migratedPool({
  adminUrl,
  schema,
  migrations,
  outbox,
  max,
}: MigratedPoolOptions): Promise<Pool> {
  // Loaded when called: @inbox/db records metrics from its first import, and a test of the telemetry
  // itself, which imports this package for other helpers, must install its meter provider first.
  const { createPool, migrate } = await import('@inbox/db');
  const pool = createPool({
    url: await createDatabase(adminUrl),
    schema,
    ...(max === undefined ? {} : { max }),
  });
  await migrate(pool, { schema, directory: fileURLToPath(migrations), outbox });
  return pool;
}

/**
 * The pool, each `query` reported with its result once it ran: for tests that count the statements a
 * change makes and the rows each touched. Clients it hands out (transactions) are not watched.
 */
export function watchedPool(pool: Pool, ran: (text: string, rowCount: number) => void): Pool {
  return Object.assign(Object.create(pool) as Pool, {
    query: async (text: string, values?: unknown[]) => {
      const result = await pool.query(text, values);
      ran(text, result.rowCount ?? 0);
      return result;
    },
  });
}
