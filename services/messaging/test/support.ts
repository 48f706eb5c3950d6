import { fileURLToPath } from 'node:url';
import { InProcessBus } from '@inbox/bus';
import { createPool, migrate, OutboxRelay, type Pool } from '@inbox/db';
import { createDatabase } from '@inbox/testkit';
import { inject } from 'vitest';

/** A pool on a database of its own with messaging's schema migrated, as the service leaves it. */
export async function migratedPool(): Promise<Pool> {
  const pool = createPool({
    url: await createDatabase(inject('infra').postgresAdminUrl),
    schema: 'messaging',
  });
  await migrate(pool, {
    schema: 'messaging',
    directory: fileURLToPath(new URL('../migrations', import.meta.url)),
    outbox: true,
  });
  return pool;
}

/** An outbox relay that is never started: the events a handler writes stay in the outbox to be read. */
export const idleRelay = (pool: Pool) =>
  new OutboxRelay({ pool, bus: new InProcessBus(), schema: 'messaging' });
