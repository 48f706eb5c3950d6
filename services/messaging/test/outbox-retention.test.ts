import { InProcessBus } from '@inbox/bus';
import type { Pool } from '@inbox/db';
import { createLogger, outboxRelay } from '@inbox/service-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MessagingConfig } from '../src/config.js';
import { migratedPool } from './support.js';

let pool: Pool;
const required = { DATABASE_URL: 'postgres://x/y', BUS_URL: 'nats://nats:4222' };

beforeAll(async () => {
  pool = await migratedPool();
});
afterAll(async () => {
  await pool?.end();
});

/** Published outbox rows, published that many hours ago; answers the ages still there. */
async function publishedHoursAgo(...hours: number[]) {
  await pool.query('delete from outbox');
  for (const age of hours) {
    await pool.query(
      `insert into outbox (id, type, workspace_id, occurred_at, data, published_at)
       values (gen_random_uuid(), 'message.sent', gen_random_uuid(), now(), '{}', now() - $1 * interval '1 hour')`,
      [age],
    );
  }
  return async () =>
    (
      await pool.query<{ age: number }>(
        `select round(extract(epoch from now() - published_at) / 3600)::int as age from outbox order by age`,
      )
    ).rows.map((row) => row.age);
}

const relayWith = (env: Record<string, string>) =>
  outboxRelay(
    { pool, bus: new InProcessBus(), logger: createLogger('messaging', { level: 'silent' }) },
    'messaging',
    MessagingConfig.parse({ ...required, ...env }).OUTBOX_RETENTION_HOURS,
  );

describe('OUTBOX_RETENTION_HOURS', () => {
  it('keeps published events 24 hours by default', async () => {
    const left = await publishedHoursAgo(2, 23, 25, 48);
    expect(await relayWith({}).prunePublished()).toBe(2);
    expect(await left()).toEqual([2, 23]);
  });

  it('keeps them as long as the setting says', async () => {
    const left = await publishedHoursAgo(2, 23, 25, 48, 100);
    expect(await relayWith({ OUTBOX_RETENTION_HOURS: '72' }).prunePublished()).toBe(1);
    expect(await left()).toEqual([2, 23, 25, 48]);
    expect(await relayWith({ OUTBOX_RETENTION_HOURS: '1' }).prunePublished()).toBe(4);
    expect(await left()).toEqual([]);
  });

  it('refuses a retention that is not a positive number of hours', () => {
    expect(MessagingConfig.safeParse({ ...required, OUTBOX_RETENTION_HOURS: '0' }).success).toBe(false);
    expect(MessagingConfig.safeParse({ ...required, OUTBOX_RETENTION_HOURS: 'a day' }).success).toBe(false);
  });
});
