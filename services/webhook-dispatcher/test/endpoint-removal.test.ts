import { randomUUID } from 'node:crypto';
import type { Pool } from '@inbox/db';
import { SecretBox } from '@inbox/service-kit';
import { watchedPool } from '@inbox/testkit';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { EndpointStore } from '../src/store/endpoints.js';
import { migratedPool } from './support.js';

let pool: Pool;
beforeAll(async () => {
  pool = await migratedPool();
});
afterAll(async () => {
  await pool?.end();
});

/** `count` deliveries of the endpoint, each with two attempts, written by two statements. */
async function deliveriesOf(workspaceId: string, endpointId: string, count: number) {
  await pool.query(
    `with made as (
       insert into deliveries (id, workspace_id, endpoint_id, event_id, event_type, body, status, next_attempt_at, finished_at)
       select gen_random_uuid(), $1, $2, gen_random_uuid(), 'message.sent', '{}', 'failed', now(), now()
         from generate_series(1, $3)
       returning id)
     insert into attempts (workspace_id, endpoint_id, delivery_id, attempt, at, status_code, duration_ms)
     select $1, $2, made.id, n, now(), 500, 10 from made, generate_series(1, 2) as n`,
    [workspaceId, endpointId, count],
  );
}

it('removes an endpoint with its deliveries a few hundred a statement, and no other endpoint’s', async () => {
  const workspaceId = randomUUID();
  const endpoints = new EndpointStore(pool, new SecretBox(SecretBox.generateKey()));
  const removed = await endpoints.create(workspaceId, { url: 'https://a.test/h', events: ['*'] });
  const kept = await endpoints.create(workspaceId, { url: 'https://b.test/h', events: ['*'] });
  await deliveriesOf(workspaceId, removed!.id, 1_200);
  await deliveriesOf(workspaceId, kept!.id, 3);

  const deletes: number[] = [];
  const counting = watchedPool(pool, (text, rows) => {
    if (text.startsWith('delete from deliveries')) deletes.push(rows);
  });
  const store = new EndpointStore(counting, new SecretBox(SecretBox.generateKey()));
  expect(await store.remove(randomUUID(), removed!.id)).toBe(false);
  expect(await store.remove(workspaceId, removed!.id)).toBe(true);
  expect(deletes).toEqual([500, 500, 200]);
  expect(await store.remove(workspaceId, removed!.id)).toBe(false);

  const { rows } = await pool.query<{ endpoint_id: string; deliveries: number; attempts: number }>(
    `select d.endpoint_id, count(distinct d.id)::int as deliveries, count(a.*)::int as attempts
       from deliveries d left join attempts a on a.delivery_id = d.id
      where d.workspace_id = $1 group by d.endpoint_id`,
    [workspaceId],
  );
  expect(rows).toEqual([{ endpoint_id: kept!.id, deliveries: 3, attempts: 6 }]);
  const { rows: left } = await pool.query('select id from endpoints where workspace_id = $1', [workspaceId]);
  expect(left.map((row) => row.id)).toEqual([kept!.id]);
});
