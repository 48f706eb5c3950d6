import { InProcessBus } from '@inbox/bus';
import { OutboxRelay, type Pool } from '@inbox/db';
import { migratedPool as migratedDatabase } from '@inbox/testkit';
import { inject } from 'vitest';

/** A pool on a database of its own with messaging's schema migrated, as the service leaves it. */
export const migratedPool = (): Promise<Pool> =>
  migratedDatabase({
    adminUrl: inject('infra').postgresAdminUrl,
    schema: 'messaging',
    migrations: new URL('../migrations', import.meta.url),
    outbox: true,
  });

/** An outbox relay that is never started: the events a handler writes stay in the outbox to be read. */
export const idleRelay = (pool: Pool) =>
  new OutboxRelay({ pool, bus: new InProcessBus(), schema: 'messaging' });
