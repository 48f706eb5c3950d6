import { randomUUID } from 'node:crypto';
import type { Pool } from '@inbox/db';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { forgetSeenIds } from '../src/inbound-seen-pruner.js';
import { inboundSeenRetentionMs } from '../src/store/inbound-seen.js';
import { migratedPool } from './support.js';

let pool: Pool;

/** True the first time an id is seen for the integration, as the connector takes it in. */
async function firstSighting(db: Pool, integrationId: string, providerMessageId: string): Promise<boolean> {
  const { rowCount } = await db.query(
    'insert into inbound_seen (integration_id, provider_message_id) values ($1, $2) on conflict do nothing',
    [integrationId, providerMessageId],
  );
  return rowCount === 1;
}

beforeAll(async () => {
  pool = await migratedPool();
});
afterAll(async () => {
  await pool?.end();
});

it('forgets provider message ids past their retention, a batch at a time, and keeps the rest', async () => {
  const integrationId = randomUUID();
  await pool.query(
    `insert into integrations (id, workspace_id, channel, provider, status, config_sealed, account_id)
     values ($1, $2, 'alt-a', 'alt-a', 'connected', 'sealed', 'inst')`,
    [integrationId, randomUUID()],
  );
  for (let i = 0; i < 5; i++) expect(await firstSighting(pool, integrationId, `old-${i}`)).toBe(true);
  await pool.query(
    `update inbound_seen set seen_at = now() - $1 * interval '1 millisecond' - interval '1 minute'`,
    [inboundSeenRetentionMs],
  );
  expect(await firstSighting(pool, integrationId, 'recent')).toBe(true);

  expect(await forgetSeenIds(pool, { batchSize: 2 })).toBe(5);
  const { rows } = await pool.query<{ id: string }>(
    'select provider_message_id as id from inbound_seen order by 1',
  );
  expect(rows.map((row) => row.id)).toEqual(['recent']);
  // A repeat of a forgotten id is taken as new here; messaging keeps it once (unique per conversation).
  expect(await firstSighting(pool, integrationId, 'old-0')).toBe(true);
  expect(await firstSighting(pool, integrationId, 'recent')).toBe(false);
});
