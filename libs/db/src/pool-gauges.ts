import { meter } from '@inbox/telemetry';
import type pg from 'pg';

/**
 * Each pool's connections, read when metrics are collected: how many are in use, idle and waited for, and
 * the most it may open. Counted at collection rather than on every checkout and release (which is how
 * the pg instrumentation counted them), so a query pays nothing for them.
 */
const pools = new Set<{ pool: WeakRef<pg.Pool>; name: string; max: number }>();
let observing = false;

export function observePool(pool: pg.Pool, name: string): void {
  pools.add({ pool: new WeakRef(pool), name, max: pool.options.max });
  if (observing) return;
  observing = true;
  const gauges = meter();
  const count = gauges.createObservableUpDownCounter('db.client.connection.count', {
    description: 'The number of connections that are currently in state described by the state attribute.',
    unit: '{connection}',
  });
  const pending = gauges.createObservableUpDownCounter('db.client.connection.pending_requests', {
    description: 'The number of current pending requests for an open connection.',
    unit: '{request}',
  });
  const max = gauges.createObservableUpDownCounter('db.client.connection.max', {
    description: 'The maximum number of open connections allowed.',
    unit: '{connection}',
  });
  gauges.addBatchObservableCallback(
    (result) => {
      for (const entry of pools) {
        const pool = entry.pool.deref();
        // An ended pool is forgotten, so that test runs creating many leave nothing behind.
        if (!pool || pool.ended) {
          pools.delete(entry);
          continue;
        }
        const poolName = { 'db.client.connection.pool.name': entry.name };
        const idle = pool.idleCount;
        result.observe(count, pool.totalCount - idle, { ...poolName, 'db.client.connection.state': 'used' });
        result.observe(count, idle, { ...poolName, 'db.client.connection.state': 'idle' });
        result.observe(pending, pool.waitingCount, poolName);
        result.observe(max, entry.max, poolName);
      }
    },
    [count, pending, max],
  );
}
