import { outsideSpans } from '@inbox/telemetry';
import type pg from 'pg';

/** Runs `work` in one transaction: committed when it resolves, rolled back when it throws. */
export async function withTransaction<T>(
  pool: pg.Pool,
  work: (client: pg.PoolClient) => Promise<T>,
): Promise<T> {
  const client = await pool.connect();
  try {
    // Transaction control gets no span of its own: a third of a send's statements, telling nothing.
    await outsideSpans(() => client.query('begin'));
    const result = await work(client);
    await outsideSpans(() => client.query('commit'));
    return result;
  } catch (error) {
    await outsideSpans(() => client.query('rollback')).catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}

/**
 * `withTransaction` under a transaction-scoped advisory lock on `key`, taken first: transactions of one
 * key run one after another, each seeing what the one before committed (a count against a limit, say,
 * which two creations at once would each pass by).
 */
export function withKeyLock<T>(
  pool: pg.Pool,
  key: string,
  work: (client: pg.PoolClient) => Promise<T>,
): Promise<T> {
  return withTransaction(pool, async (client) => {
    await client.query('select pg_advisory_xact_lock(hashtext($1))', [key]);
    return work(client);
  });
}
