import { eventTypes, type InboundMessageEvent, type InboundStatusEvent } from '@inbox/contracts';
import { type OutboxRelay, type Pool, withTransaction, writeEvent } from '@inbox/db';
import { type DeliveryStatus, nextDeliveryStatus } from '../domain/delivery-status.js';
import { eventPayloads } from '../domain/events.js';
import { ConversationStore } from '../store/conversations.js';

export interface InboundDeps {
  pool: Pool;
  relay: OutboxRelay;
}

/**
 * Contact and conversation found or created, the message stored once (a redelivered event changes
 * nothing), the 24-hour window opened, and message.received written in the same transaction.
 */
export async function receiveMessage(deps: InboundDeps, inbound: InboundMessageEvent): Promise<void> {
  const workspaceId = inbound.workspace_id;
  const stored = await withTransaction(deps.pool, async (client) => {
    const store = new ConversationStore(client, workspaceId);
    const { contact } = await store.upsertContact(inbound.from, inbound.name, { onlyIfEmpty: true });
    const { conversation } = await store.openConversation(contact.id, inbound.integration);
    const messageId = await store.addInboundMessage({
      conversationId: conversation.id,
      providerMessageId: inbound.provider_message_id,
      text: inbound.text,
      type: inbound.type,
      sentAt: inbound.sent_at,
    });
    if (!messageId) return false;
    await store.reopen(conversation);
    const assignee =
      conversation.assigned_to_type && conversation.assigned_to_id
        ? { type: conversation.assigned_to_type, id: conversation.assigned_to_id }
        : null;
    await writeEvent(
      client,
      eventTypes.messageReceived,
      eventPayloads.received({
        workspaceId,
        conversationId: conversation.id,
        contact: { id: contact.id, phone: contact.phone, name: contact.name },
        message: { id: messageId, text: inbound.text, type: inbound.type },
        assignee,
        integration: { id: inbound.integration.id, provider: inbound.integration.provider },
      }),
    );
    return true;
  });
  if (stored) deps.relay.wake();
}

/** A provider's word on one of ours: the message's delivery status moves forward, never back. */
export async function applyStatus(deps: InboundDeps, update: InboundStatusEvent): Promise<void> {
  await withTransaction(deps.pool, async (client) => {
    const { rows } = await client.query<{ id: string; delivery_status: DeliveryStatus | null }>(
      `select m.id, m.delivery_status from messages m
         join conversations c on c.id = m.conversation_id and c.workspace_id = m.workspace_id
        where m.workspace_id = $1 and c.integration_id = $2 and m.provider_message_id = $3 and m.direction = 'outbound'
        for update of m`,
      [update.workspace_id, update.integration_id, update.provider_message_id],
    );
    for (const row of rows) {
      const next = nextDeliveryStatus(row.delivery_status, update.status);
      if (next === row.delivery_status) continue;
      await client.query(
        'update messages set delivery_status = $3, delivery_error = coalesce($4, delivery_error) where workspace_id = $1 and id = $2',
        [update.workspace_id, row.id, next, next === 'failed' ? update.error : null],
      );
    }
  });
}
