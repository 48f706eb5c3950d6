import type { Pool } from '@inbox/db';
import { migratedPool as migratedDatabase } from '@inbox/testkit';
import { inject } from 'vitest';

/** A pool on a fresh database of this run's Postgres, with the connector's schema and outbox migrated. */
export const migratedPool = (options: { max?: number } = {}): Promise<Pool> =>
  migratedDatabase({
    adminUrl: inject('infra').postgresAdminUrl,
    schema: 'connector',
    migrations: new URL('../migrations', import.meta.url),
    outbox: true,
    ...options,
  });
