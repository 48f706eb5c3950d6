import { randomUUID } from 'node:crypto';
import { NatsBus } from '@inbox/bus';
import { type InboundMessageEvent, laneOf, type WireEvent } from '@inbox/contracts';
import { createPool, type Pool } from '@inbox/db';
import { type HostedService, hostService } from '@inbox/service-kit';
import { createDatabase, uniquePrefix, waitFor } from '@inbox/testkit';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { messagingService } from '../src/service.js';

// The messaging service as it runs, on a real NATS and Postgres: what one workspace's inbound burst does
// to another workspace's inbound messages.

let messaging: HostedService;
let connector: NatsBus;
let pool: Pool;

beforeAll(async () => {
  const { natsUrl, postgresAdminUrl } = inject('infra');
  const databaseUrl = await createDatabase(postgresAdminUrl);
  const prefix = uniquePrefix();
  messaging = await hostService(messagingService(), {
    databaseUrl,
    busUrl: natsUrl,
    busPrefix: prefix,
    port: 0,
    host: '127.0.0.1',
    logLevel: 'silent',
  });
  // Publishes as the connector does.
  connector = await NatsBus.connect({ url: natsUrl, prefix });
  pool = createPool({ url: databaseUrl, schema: 'messaging' });
});
afterAll(async () => {
  await connector?.drain();
  await messaging?.stop();
  await pool?.end();
});

const integration = { id: randomUUID(), channel: 'chat-official', provider: 'chat-official' } as const;

function inboundMessage(workspaceId: string, phone: string, text: string): WireEvent {
  const data = {
    workspace_id: workspaceId,
    integration,
    provider_message_id: randomUUID(),
    from: phone,
    name: null,
    text,
    type: 'text',
    sent_at: new Date().toISOString(),
  } satisfies InboundMessageEvent;
  return {
    id: randomUUID(),
    type: 'inbound.message',
    workspace_id: workspaceId,
    occurred_at: new Date().toISOString(),
    data,
  };
}

async function inboundCount(workspaceId: string): Promise<number> {
  const { rows } = await pool.query<{ count: number }>(
    `select count(*)::int as count from messages where workspace_id = $1 and direction = 'inbound'`,
    [workspaceId],
  );
  return rows[0]!.count;
}

describe('inbound lanes', () => {
  it("takes a workspace's messages in while another workspace's burst into one conversation is stuck", async () => {
    const busy = randomUUID();
    let calm = randomUUID();
    while (laneOf(calm) === laneOf(busy)) calm = randomUUID();
    await connector.publish(inboundMessage(busy, '+5511977770001', 'primeira'));
    await waitFor(async () => (await inboundCount(busy)) === 1, {
      what: "the busy workspace's conversation",
    });

    // Every handler of the burst waits on its conversation's row, held here as a long transaction would.
    const holder = await pool.connect();
    try {
      await holder.query('begin');
      await holder.query('select 1 from conversations where workspace_id = $1 for update', [busy]);
      for (let i = 0; i < 6; i++)
        await connector.publish(inboundMessage(busy, '+5511977770001', `rajada ${i}`));
      await connector.publish(inboundMessage(calm, '+5511977770002', 'olá'));
      // Well before the statement timeout (15 s) would free the burst's handlers.
      await waitFor(async () => (await inboundCount(calm)) === 1, {
        what: "the other workspace's message",
        timeoutMs: 8_000,
      });
      expect(await inboundCount(busy)).toBe(1);
    } finally {
      await holder.query('rollback');
      holder.release();
    }
    await waitFor(async () => (await inboundCount(busy)) === 7, { what: 'the burst, once its row is free' });
  });
});
