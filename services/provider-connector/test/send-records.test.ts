import { randomUUID } from 'node:crypto';
import { createPool, type Pool, type Queryable } from '@inbox/db';
import { prepareSchema, SecretBox } from '@inbox/service-kit';
import { createDatabase } from '@inbox/testkit';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { connectorService } from '../src/service.js';
import { SendRecords } from '../src/store/send-records.js';

// A message's provider call happens once because its attempt is written before the call and the
// provider's answer before the command is answered. The records of one turn share a statement: the
// guarantees must hold for each message as if each had its own, across workspaces sharing a turn.

let pool: Pool;
let statements = 0;
/** The connector's pool, counting the statements run through it. */
const counted: Queryable = {
  query: ((...args: Parameters<Pool['query']>) => {
    statements++;
    return pool.query(...args);
  }) as Pool['query'],
};
const integrations: Record<'a' | 'b', { workspaceId: string; integrationId: string }> = {
  a: { workspaceId: randomUUID(), integrationId: randomUUID() },
  b: { workspaceId: randomUUID(), integrationId: randomUUID() },
};

beforeAll(async () => {
  pool = createPool({ url: await createDatabase(inject('infra').postgresAdminUrl), schema: 'connector' });
  const definition = connectorService({
    encryptionKey: SecretBox.generateKey(),
    publicConnectorUrl: 'http://127.0.0.1:9',
    allowedCidrs: '127.0.0.0/8',
  });
  await prepareSchema(pool, definition);
  for (const { workspaceId, integrationId } of Object.values(integrations))
    await pool.query(
      `insert into integrations (id, workspace_id, channel, provider, status, config_sealed, account_id)
       values ($1, $2, 'alt-b', 'alt-b', 'connected', 'sealed', 'account')`,
      [integrationId, workspaceId],
    );
});
afterAll(async () => {
  await pool.end();
});

const send = async (messageId: string) =>
  (
    await pool.query<{ workspace_id: string; provider_message_id: string | null }>(
      'select workspace_id, provider_message_id from sends where message_id = $1',
      [messageId],
    )
  ).rows[0];

describe('send records', () => {
  it("start each workspace's attempts in one statement per turn, once per message", async () => {
    const records = new SendRecords(counted);
    const [m1, m2, m3] = [randomUUID(), randomUUID(), randomUUID()];
    statements = 0;
    const started = await Promise.all([
      records.begin({ ...integrations.a, messageId: m1 }),
      records.begin({ ...integrations.b, messageId: m2 }),
      records.begin({ ...integrations.a, messageId: m3 }),
      // The same message asked again in the same turn, its id in capitals: it starts once.
      records.begin({ ...integrations.a, messageId: m1.toUpperCase() }),
    ]);
    expect(started).toEqual([true, true, true, false]);
    expect(statements).toBe(1);
    expect((await send(m2))?.workspace_id).toBe(integrations.b.workspaceId);
    // A later turn finds them started.
    expect(await records.begin({ ...integrations.a, messageId: m3 })).toBe(false);
  });

  it("record each provider's answer in one statement per turn, never over an earlier answer", async () => {
    const records = new SendRecords(counted);
    const [m1, m2] = [randomUUID(), randomUUID()];
    await Promise.all([
      records.begin({ ...integrations.a, messageId: m1 }),
      records.begin({ ...integrations.b, messageId: m2 }),
    ]);
    const sentAt = new Date('2026-11-28T10:00:00Z');
    statements = 0;
    await Promise.all([
      records.record({ ...integrations.a, messageId: m1, providerMessageId: 'p-1', sentAt }),
      records.record({ ...integrations.b, messageId: m2, providerMessageId: 'p-2', sentAt }),
      // A second answer for the first message in the same turn changes nothing, as it would in turn.
      records.record({ ...integrations.a, messageId: m1, providerMessageId: 'p-1-again', sentAt }),
    ]);
    expect(statements).toBe(1);
    expect((await send(m1))?.provider_message_id).toBe('p-1');
    expect((await send(m2))?.provider_message_id).toBe('p-2');
    await Promise.all([
      records.record({ ...integrations.a, messageId: m1, providerMessageId: 'p-1-later', sentAt }),
      records.record({ ...integrations.b, messageId: m2, providerMessageId: 'p-2-later', sentAt }),
    ]);
    expect((await send(m1))?.provider_message_id).toBe('p-1');
    expect((await send(m2))?.provider_message_id).toBe('p-2');
  });

  it("fail only the attempt whose integration is gone, not another workspace's in the same turn", async () => {
    const records = new SendRecords(counted);
    const [kept, orphan] = [randomUUID(), randomUUID()];
    const settled = await Promise.allSettled([
      records.begin({ ...integrations.b, messageId: kept }),
      records.begin({
        workspaceId: integrations.a.workspaceId,
        integrationId: randomUUID(),
        messageId: orphan,
      }),
    ]);
    expect(settled[0]).toEqual({ status: 'fulfilled', value: true });
    expect(settled[1]).toMatchObject({ status: 'rejected', reason: { code: '23503' } });
    expect(await send(kept)).toBeDefined();
    expect(await send(orphan)).toBeUndefined();
  });

  it('let two replicas that start the same messages at once wait for each other, never deadlock', async () => {
    // Each row of this workspace takes a moment to write, so the two statements overlap row by row.
    const slow = randomUUID();
    await pool.query(
      `insert into integrations (id, workspace_id, channel, provider, status, config_sealed, account_id)
       values ($1, $2, 'alt-b', 'alt-b', 'connected', 'sealed', 'account')`,
      [slow, slow],
    );
    await pool.query(`create function slow_send() returns trigger language plpgsql as $$
      begin perform pg_sleep(0.3); return new; end $$`);
    await pool.query(`create trigger slow_send before insert on sends for each row
      when (new.workspace_id = '${slow}') execute function slow_send()`);
    const second = createPool({ url: pool.options.connectionString!, schema: 'connector' });
    try {
      const [m1, m2] = [randomUUID(), randomUUID()];
      const attempt = (messageId: string) => ({ workspaceId: slow, integrationId: slow, messageId });
      const [one, other] = [new SendRecords(pool), new SendRecords(second)];
      // The two replicas' turns bring the messages in opposite orders.
      const settled = await Promise.allSettled([
        one.begin(attempt(m1)),
        one.begin(attempt(m2)),
        other.begin(attempt(m2)),
        other.begin(attempt(m1)),
      ]);
      expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled', 'fulfilled']);
      // Each message started once, by whichever replica wrote it first.
      const values = settled.map((s) => (s as PromiseFulfilledResult<boolean>).value);
      expect([values[0]! !== values[3]!, values[1]! !== values[2]!]).toEqual([true, true]);
    } finally {
      await second.end();
      await pool.query('drop trigger slow_send on sends; drop function slow_send()');
    }
  });
});
