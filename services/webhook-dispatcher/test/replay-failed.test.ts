import { randomUUID } from 'node:crypto';
import type { Pool } from '@inbox/db';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { DeliveryStore } from '../src/store/deliveries.js';
import { migratedPool } from './support.js';

let pool: Pool;
beforeAll(async () => {
  pool = await migratedPool();
});
afterAll(async () => {
  await pool?.end();
});

/** An endpoint and `count` failed deliveries created by one statement (one time for all), `daysAgo`. */
async function failedDeliveries(workspaceId: string, endpointId: string, count: number, daysAgo: number) {
  await pool.query(
    `insert into deliveries (id, workspace_id, endpoint_id, event_id, event_type, body, status, created_at, next_attempt_at, finished_at)
     select gen_random_uuid(), $1, $2, gen_random_uuid(), 'message.sent', '{}', 'failed',
            now() - $4 * interval '1 day', now(), now()
       from generate_series(1, $3)`,
    [workspaceId, endpointId, count, daysAgo],
  );
}

it('replays the failed deliveries since a time a batch a statement, each once though one fails again meanwhile', async () => {
  const workspaceId = randomUUID();
  const [endpointId, otherId] = [randomUUID(), randomUUID()];
  for (const id of [endpointId, otherId]) {
    await pool.query(
      `insert into endpoints (id, workspace_id, url, events) values ($1, $2, 'https://x.test/h', '{*}')`,
      [id, workspaceId],
    );
  }
  await failedDeliveries(workspaceId, endpointId, 7, 1);
  await failedDeliveries(workspaceId, endpointId, 2, 10);
  await failedDeliveries(workspaceId, otherId, 3, 1);

  // After each statement of the replay, what it made due fails again at once (a worker and a receiver
  // that refuses everything), as it may between two batches.
  const statements: string[] = [];
  const failingAgain = Object.assign(Object.create(pool) as Pool, {
    query: async (text: string, values?: unknown[]) => {
      statements.push(text);
      const result = await pool.query(text, values);
      await pool.query(
        `update deliveries set status = 'failed', finished_at = now() where endpoint_id = $1 and status = 'pending'`,
        [endpointId],
      );
      return result;
    },
  });
  const since = new Date(Date.now() - 5 * 86_400_000).toISOString();
  expect(await new DeliveryStore(failingAgain).replayFailed(workspaceId, endpointId, since, 3)).toBe(7);
  // Three, three, one, and the empty batch that ends it.
  expect(statements).toHaveLength(4);

  expect(await new DeliveryStore(pool).replayFailed(workspaceId, endpointId, since, 3)).toBe(7);
  const { rows } = await pool.query<{ endpoint_id: string; status: string; n: number }>(
    `select endpoint_id, status, count(*)::int as n from deliveries where workspace_id = $1
      group by endpoint_id, status order by endpoint_id = $2 desc, status`,
    [workspaceId, endpointId],
  );
  expect(rows).toEqual([
    { endpoint_id: endpointId, status: 'failed', n: 2 },
    { endpoint_id: endpointId, status: 'pending', n: 7 },
    { endpoint_id: otherId, status: 'failed', n: 3 },
  ]);
});
