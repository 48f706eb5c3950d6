import { randomUUID } from 'node:crypto';
import type { Pool } from '@inbox/db';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { forgetMissedTaken, forgetSeenIds, forgetSends } from '../src/bookkeeping-pruner.js';
import { inboundSeenRetentionMs } from '../src/store/inbound-seen.js';
import { MissedCallbackStore, missedTakenRetentionMs } from '../src/store/missed-callbacks.js';
import { sendRetentionMs } from '../src/store/sends.js';
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

it('forgets sends the provider accepted past their retention, and keeps every attempt of unknown outcome', async () => {
  const integrationId = randomUUID();
  const workspaceId = randomUUID();
  await pool.query(
    `insert into integrations (id, workspace_id, channel, provider, status, config_sealed, account_id)
     values ($1, $2, 'alt-a', 'alt-a', 'connected', 'sealed', 'inst-sends')`,
    [integrationId, workspaceId],
  );
  /** A send attempted `attemptedAgo` ago, and known sent `sentAgo` ago (null: its outcome unknown). */
  const send = async (providerId: string | null, attemptedAgo: number, sentAgo: number | null) => {
    await pool.query(
      `insert into sends (message_id, workspace_id, integration_id, provider_message_id, sent_at, attempted_at)
       values ($1, $2, $3, $4::text, now() - $6 * interval '1 millisecond', now() - $5 * interval '1 millisecond')`,
      [randomUUID(), workspaceId, integrationId, providerId, attemptedAgo, sentAgo],
    );
  };
  const old = sendRetentionMs + 60_000;
  for (let i = 0; i < 3; i++) await send(`wamid.old-${i}`, old + i, old + i);
  await send(null, old * 2, null);
  await send('wamid.recent', 60_000, 60_000);
  // Its outcome unknown for a month, until a status settled it yesterday.
  await send('wamid.settled', old * 2, 86_400_000);

  expect(await forgetSends(pool, { batchSize: 2 })).toBe(3);
  const { rows } = await pool.query<{ provider_message_id: string | null }>(
    'select provider_message_id from sends where integration_id = $1 order by 1',
    [integrationId],
  );
  expect(rows.map((row) => row.provider_message_id)).toEqual(['wamid.recent', 'wamid.settled', null]);
});

it('forgets the missed callbacks taken once the provider lists them no more, and keeps the recent ones', async () => {
  const integrationId = randomUUID();
  const missed = new MissedCallbackStore(pool);
  await missed.taken(integrationId, ['questions:1', 'questions:2', 'messages:abc']);
  await pool.query(
    `update missed_callbacks_taken set taken_at = now() - $1 * interval '1 millisecond' - interval '1 minute'`,
    [missedTakenRetentionMs],
  );
  await missed.taken(integrationId, ['questions:3']);
  expect([...(await missed.notTaken(integrationId, ['questions:1', 'questions:3', 'questions:4']))]).toEqual([
    'questions:4',
  ]);

  expect(await forgetMissedTaken(pool, { batchSize: 2 })).toBe(3);
  expect([...(await missed.notTaken(integrationId, ['questions:1', 'questions:3']))]).toEqual([
    'questions:1',
  ]);
});
