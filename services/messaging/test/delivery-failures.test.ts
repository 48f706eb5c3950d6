import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { InboundStatusEvent } from '@inbox/contracts';
import { type OutboxRelay, type Pool, type Queryable, withTransaction } from '@inbox/db';
import { serveMetrics } from '@inbox/telemetry';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyStatus } from '../src/handlers/inbound.js';
import { ConversationViews } from '../src/store/conversation-views.js';
import { ConversationStore } from '../src/store/conversations.js';
import { recordSent } from '../src/store/sent-messages.js';
import { idleRelay, migratedPool } from './support.js';

let pool: Pool;
let relay: OutboxRelay;

beforeAll(async () => {
  pool = await migratedPool();
  // Not started: applying a status writes no event.
  relay = idleRelay(pool);
});
afterAll(async () => {
  await pool?.end();
});

/** A workspace with one official conversation and one outbound message in it, as send-message leaves it. */
/** The connector's answer recorded, as the send's own request records it. */
function markSent(
  db: Queryable,
  sent: {
    workspaceId: string;
    conversationId: string;
    integrationId: string;
    messageId: string;
    providerMessageId: string;
  },
) {
  return recordSent(db, {
    ...sent,
    integration: { id: sent.integrationId, provider: 'chat-official' },
    text: 'Olá',
    senderType: 'agent',
    sentAt: new Date().toISOString(),
  });
}

async function sentMessage(options: { providerMessageId?: string | null } = {}) {
  const workspaceId = randomUUID();
  const integrationId = randomUUID();
  const providerMessageId =
    options.providerMessageId === undefined ? `wamid.${randomUUID()}` : options.providerMessageId;
  const { conversationId, messageId } = await withTransaction(pool, async (client) => {
    const store = new ConversationStore(client, workspaceId);
    const { contact } = await store.upsertContact('+5511944440001', 'Dora');
    const { conversation } = await store.openConversation(contact.id, {
      id: integrationId,
      channel: 'chat-official',
      provider: 'chat-official',
    });
    const id = await store.addOutboundMessage({
      conversationId: conversation.id,
      text: 'Olá',
      senderType: 'agent',
    });
    // The connector's answer (and with it the provider's id) may not have been recorded yet.
    if (providerMessageId)
      await markSent(client, {
        workspaceId,
        conversationId: conversation.id,
        integrationId,
        messageId: id,
        providerMessageId,
      });
    return { conversationId: conversation.id, messageId: id };
  });
  const status = (update: Partial<InboundStatusEvent>): InboundStatusEvent => ({
    workspace_id: workspaceId,
    integration_id: integrationId,
    provider_message_id: providerMessageId ?? 'wamid.not-recorded-yet',
    status: 'failed',
    error: null,
    ...update,
  });
  const read = async () => {
    const page = await new ConversationViews(pool, workspaceId).messagePage(conversationId, { limit: 50 });
    return page.messages.find((message) => message.id === messageId)!;
  };
  const failed = () => new ConversationViews(pool, workspaceId).failedMessages({ limit: 50 });
  return { workspaceId, conversationId, messageId, providerMessageId, status, read, failed };
}

const lateWindowFailure = {
  status: 'failed' as const,
  error:
    '131047 Re-engagement message: Message failed to send because more than 24 hours have passed since the customer last replied to this number.',
  error_code: 131047,
  at: '2026-03-01T12:00:05.000Z',
};

async function failuresCounted(labels: string): Promise<number> {
  const server = createServer(serveMetrics);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const { port } = server.address() as AddressInfo;
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    const line = text
      .split('\n')
      .find((l) => l.startsWith('messaging_delivery_failures_total{') && l.includes(labels));
    return line ? Number(line.split(' ').at(-1)) : 0;
  } finally {
    server.close();
  }
}

describe('late delivery failures', () => {
  it('records the provider code and time on the message, lists it, and counts it once', async () => {
    const message = await sentMessage();
    const labels = 'channel="chat-official",error_code="131047"';
    const before = await failuresCounted(labels);
    const update = message.status({ ...lateWindowFailure, message_id: message.messageId });
    await applyStatus({ pool, relay }, update);
    // Meta redelivers; the failure is recorded and counted once.
    await applyStatus({ pool, relay }, update);

    expect(await message.read()).toMatchObject({
      status: 'sent',
      delivery_status: 'failed',
      delivery_error_code: 131047,
      delivery_failed_at: '2026-03-01T12:00:05.000Z',
      error: lateWindowFailure.error,
    });
    expect(await message.failed()).toEqual([
      {
        id: message.messageId,
        conversation_id: message.conversationId,
        integration: { id: update.integration_id, channel: 'chat-official' },
        text: 'Olá',
        provider_message_id: message.providerMessageId,
        delivery_error_code: 131047,
        error: lateWindowFailure.error,
        sent_at: expect.any(String),
        failed_at: '2026-03-01T12:00:05.000Z',
      },
    ]);
    expect((await failuresCounted(labels)) - before).toBe(1);

    // A late "delivered" does not undo the failure.
    await applyStatus({ pool, relay }, message.status({ status: 'delivered', error: null }));
    expect(await message.read()).toMatchObject({ delivery_status: 'failed', delivery_error_code: 131047 });
  });

  it('finds the message by our id when the provider id was not recorded yet', async () => {
    const message = await sentMessage({ providerMessageId: null });
    await applyStatus(
      { pool, relay },
      message.status({ ...lateWindowFailure, message_id: message.messageId }),
    );
    expect(await message.read()).toMatchObject({
      status: 'pending',
      provider_message_id: null,
      delivery_status: 'failed',
      delivery_error_code: 131047,
    });
  });

  it("finds it by the provider's id alone, for events without ours, and times it when the provider does not", async () => {
    const message = await sentMessage();
    const before = Date.now();
    await applyStatus(
      { pool, relay },
      message.status({ status: 'failed', error: '131053 Media upload error', error_code: 131053 }),
    );
    const read = await message.read();
    expect(read).toMatchObject({ delivery_status: 'failed', delivery_error_code: 131053 });
    expect(Date.parse(read.delivery_failed_at!)).toBeGreaterThanOrEqual(before - 1_000);
  });

  it('lists only failures, newest first, since a time and a page at a time', async () => {
    const older = await sentMessage();
    const { workspaceId } = older;
    await applyStatus(
      { pool, relay },
      older.status({ ...lateWindowFailure, at: '2026-03-01T10:00:00.000Z' }),
    );
    // Another message of the same workspace, delivered, and one failed later.
    const views = new ConversationViews(pool, workspaceId);
    const integrationId = randomUUID();
    const laterId = await withTransaction(pool, async (client) => {
      const store = new ConversationStore(client, workspaceId);
      const { contact } = await store.upsertContact('+5511944440002', null);
      const { conversation } = await store.openConversation(contact.id, {
        id: integrationId,
        channel: 'chat-official',
        provider: 'chat-official',
      });
      const id = await store.addOutboundMessage({
        conversationId: conversation.id,
        text: 'b',
        senderType: 'agent',
      });
      await markSent(client, {
        workspaceId,
        conversationId: conversation.id,
        integrationId,
        messageId: id,
        providerMessageId: 'wamid.later',
      });
      return id;
    });
    await applyStatus(
      { pool, relay },
      {
        workspace_id: workspaceId,
        integration_id: integrationId,
        provider_message_id: 'wamid.later',
        ...lateWindowFailure,
        at: '2026-03-01T11:00:00.000Z',
      },
    );
    expect((await views.failedMessages({ limit: 50 })).map((m) => m.id)).toEqual([laterId, older.messageId]);
    expect((await views.failedMessages({ limit: 1 })).map((m) => m.id)).toEqual([laterId]);
    // The next page starts after the last message of one.
    expect((await views.failedMessages({ limit: 1, before: laterId })).map((m) => m.id)).toEqual([
      older.messageId,
    ]);
    expect(await views.failedMessages({ limit: 1, before: older.messageId })).toEqual([]);
    expect(
      (await views.failedMessages({ limit: 50, since: '2026-03-01T10:30:00.000Z' })).map((m) => m.id),
    ).toEqual([laterId]);
    // Another workspace sees none of them.
    expect(await new ConversationViews(pool, randomUUID()).failedMessages({ limit: 50 })).toEqual([]);
  });
});

describe('an outbound message', () => {
  it('is activity of its conversation: the inbox, ordered by it, puts the conversation first', async () => {
    const { workspaceId, conversationId } = await sentMessage();
    await pool.query("update conversations set updated_at = now() - interval '1 day' where id = $1", [
      conversationId,
    ]);
    await withTransaction(pool, (client) =>
      new ConversationStore(client, workspaceId).addOutboundMessage({
        conversationId,
        text: 'De novo',
        senderType: 'agent',
      }),
    );
    const { rows } = await pool.query<{ recent: boolean }>(
      "select updated_at > now() - interval '1 minute' as recent from conversations where workspace_id = $1 and id = $2",
      [workspaceId, conversationId],
    );
    expect(rows).toEqual([{ recent: true }]);
  });
});
