import { randomUUID } from 'node:crypto';
import type { InboundWatermarkEvent } from '@inbox/contracts';
import { type OutboxRelay, type Pool, withTransaction } from '@inbox/db';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyWatermark, watermarkReachMessages } from '../src/handlers/inbound.js';
import { ConversationStore } from '../src/store/conversations.js';
import { recordSent } from '../src/store/sent-messages.js';
import { idleRelay, migratedPool } from './support.js';

let pool: Pool;
let relay: OutboxRelay;

beforeAll(async () => {
  pool = await migratedPool();
  relay = idleRelay(pool);
});
afterAll(async () => {
  await pool?.end();
});

const minutes = (n: number) => n * 60_000;
/** The provider's watermark: the time it took the last message the user read. */
const upTo = new Date('2026-11-30T12:00:00.000Z');

/** A Messenger conversation with a user, in a workspace of its own unless one is given. */
async function conversationWith(userId: string, workspaceId = randomUUID(), integrationId = randomUUID()) {
  const conversationId = await withTransaction(pool, async (client) => {
    const store = new ConversationStore(client, workspaceId);
    const { contact } = await store.upsertUserContact('social', userId, null);
    const { conversation } = await store.openConversation(contact.id, {
      id: integrationId,
      channel: 'social',
      provider: 'social',
    });
    return conversation.id;
  });
  /** An outbound message created `createdAgo` before the watermark, recorded sent `sentAfter` after it. */
  const message = async (
    createdAgo: number,
    sentAfter: number | null,
    deliveryStatus: string | null = null,
  ): Promise<string> => {
    const id = await withTransaction(pool, (client) =>
      new ConversationStore(client, workspaceId).addOutboundMessage({
        conversationId,
        text: 'Entregamos, sim!',
        senderType: 'human',
      }),
    );
    if (sentAfter !== null)
      await recordSent(pool, {
        workspaceId,
        conversationId,
        messageId: id,
        integration: { id: integrationId, provider: 'social' },
        providerMessageId: `m_${randomUUID()}`,
        text: 'Entregamos, sim!',
        senderType: 'human',
        sentAt: new Date(upTo.getTime() + sentAfter).toISOString(),
      });
    await pool.query('update messages set created_at = $2, delivery_status = $3 where id = $1', [
      id,
      new Date(upTo.getTime() - createdAgo),
      deliveryStatus,
    ]);
    return id;
  };
  const watermark = (update: Partial<InboundWatermarkEvent> = {}): InboundWatermarkEvent => ({
    workspace_id: workspaceId,
    integration_id: integrationId,
    channel: 'social',
    user_id: userId,
    status: 'read',
    up_to: upTo.toISOString(),
    ...update,
  });
  return { workspaceId, integrationId, message, watermark };
}

async function statusesOf(ids: string[]): Promise<Array<string | null>> {
  const { rows } = await pool.query<{ id: string; delivery_status: string | null }>(
    'select id, delivery_status from messages where id = any($1::uuid[])',
    [ids],
  );
  return ids.map((id) => rows.find((row) => row.id === id)!.delivery_status);
}

describe('a provider watermark (Messenger reads, deliveries without ids)', () => {
  it('moves every message sent to the user up to it forward, and none after it or before its reach', async () => {
    const user = `psid-${randomUUID()}`;
    const talk = await conversationWith(user);
    const ids = [
      await talk.message(minutes(10), -minutes(10)), // long before
      await talk.message(1_000, 800), // the last one read: recorded sent a round trip after the provider took it
      await talk.message(-1_000, 1_500), // created after the watermark
      await talk.message(minutes(5), minutes(5)), // created before it, but taken long after
      await talk.message(minutes(60 * 24 * 31), -minutes(60 * 24 * 31)), // beyond its reach
      await talk.message(1_000, null), // never sent
    ];
    await applyWatermark({ pool, relay }, talk.watermark());
    expect(await statusesOf(ids)).toEqual(['read', 'read', null, null, null, null]);
  });

  it('moves a message only forward: never a failure, never a read back to delivered', async () => {
    const talk = await conversationWith(`psid-${randomUUID()}`);
    const ids = [
      await talk.message(minutes(1), -minutes(1), 'failed'),
      await talk.message(minutes(1), -minutes(1), 'read'),
      await talk.message(minutes(1), -minutes(1), 'sent'),
    ];
    await applyWatermark({ pool, relay }, talk.watermark({ status: 'delivered' }));
    expect(await statusesOf(ids)).toEqual(['failed', 'read', 'delivered']);
  });

  it("reaches no further back than the conversation's last thousand messages before it", async () => {
    const talk = await conversationWith(`psid-${randomUUID()}`);
    const beyond = await talk.message(minutes(10), -minutes(10));
    const last = await talk.message(minutes(2), -minutes(2));
    // Between the two, the rest of the thousand: copies of the last, already read.
    await pool.query(
      `insert into messages
       select (jsonb_populate_record(null::messages, to_jsonb(m) || jsonb_build_object(
         'id', gen_random_uuid(), 'idempotency_key', null, 'delivery_status', 'read',
         'created_at', m.created_at - g * interval '1 millisecond'))).*
         from messages m, generate_series(1, $2::int - 2) g where m.id = $1`,
      [last, watermarkReachMessages],
    );
    const within = await talk.message(minutes(9), -minutes(9));
    await applyWatermark({ pool, relay }, talk.watermark());
    expect(await statusesOf([beyond, within, last])).toEqual([null, 'read', 'read']);
  });

  it("touches no other user's messages, on the integration or in another workspace", async () => {
    const user = `psid-${randomUUID()}`;
    const talk = await conversationWith(user);
    const neighbour = await conversationWith(`psid-${randomUUID()}`, talk.workspaceId, talk.integrationId);
    const elsewhere = await conversationWith(user, randomUUID(), talk.integrationId);
    const ids = [
      await talk.message(minutes(1), -minutes(1)),
      await neighbour.message(minutes(1), -minutes(1)),
      await elsewhere.message(minutes(1), -minutes(1)),
    ];
    await applyWatermark({ pool, relay }, talk.watermark());
    expect(await statusesOf(ids)).toEqual(['read', null, null]);
  });
});
