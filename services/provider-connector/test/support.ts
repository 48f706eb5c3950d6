import { fileURLToPath } from 'node:url';
import { createPool, migrate, type Pool } from '@inbox/db';
import { createDatabase } from '@inbox/testkit';
import { inject } from 'vitest';

/** A pool on a fresh database of this run's Postgres, with the connector's schema and outbox migrated. */
export async function migratedPool(options: { max?: number } = {}): Promise<Pool> {
  const pool = createPool({
    url: await createDatabase(inject('infra').postgresAdminUrl),
    schema: 'connector',
    ...options,
  });
  await migrate(pool, {
    schema: 'connector',
    directory: fileURLToPath(new URL('../migrations', import.meta.url)),
    outbox: true,
  });
  return pool;
}
