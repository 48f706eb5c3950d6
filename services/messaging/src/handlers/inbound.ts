import { eventTypes, type InboundMessageEvent, type InboundStatusEvent } from '@inbox/contracts';
import { type OutboxRelay, type Pool, withTransaction, writeEvent } from '@inbox/db';
import { meter } from '@inbox/telemetry';
import { type DeliveryStatus, nextDeliveryStatus } from '../domain/delivery-status.js';
import { errorCodeLabel } from '../domain/error-code-label.js';
import { eventPayloads } from '../domain/events.js';
import { canonicalPhone } from '../domain/phone.js';
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
    const { contact } =
      inbound.from === null
        ? await store.upsertUserContact(inbound.integration.channel, inbound.from_user_id!, inbound.name)
        : await store.upsertContact(await store.storedPhone(canonicalPhone(inbound.from)), inbound.name, {
            onlyIfEmpty: true,
          });
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

const deliveryFailures = meter('messaging').createCounter('messaging.delivery.failures', {
  description:
    'Outbound messages a provider accepted and later reported failed, by channel and provider error code',
});

/**
 * A provider's word on one of ours: the message's delivery status moves forward, never back. A failure
 * is recorded with the provider's code and time, once (a repeated callback changes nothing), and counted.
 * The message is found by our id when the connector knew it, else by the provider's id.
 */
export async function applyStatus(deps: InboundDeps, update: InboundStatusEvent): Promise<void> {
  const failedOn = await withTransaction(deps.pool, async (client) => {
    const channels: string[] = [];
    const { rows } = await client.query<{
      id: string;
      channel: string;
      delivery_status: DeliveryStatus | null;
      outcome_unknown: boolean;
    }>(
      `select m.id, c.channel, m.delivery_status,
              m.status = 'pending' and m.outcome_unknown_since is not null as outcome_unknown
         from messages m
         join conversations c on c.id = m.conversation_id and c.workspace_id = m.workspace_id
        where m.workspace_id = $1 and c.integration_id = $2 and m.direction = 'outbound'
          and (m.id = $4 or ($4::uuid is null and m.provider_message_id = $3))
        for update of m`,
      [update.workspace_id, update.integration_id, update.provider_message_id, update.message_id ?? null],
    );
    for (const row of rows) {
      // A send whose outcome was unknown, now named by the provider's status (the connector recorded it
      // as sent): the reconciliation job asks about it again, and settles it from that record.
      if (row.outcome_unknown && update.message_id)
        await client.query(
          `update messages set outcome_unknown_since = null where workspace_id = $1 and id = $2 and status = 'pending'`,
          [update.workspace_id, row.id],
        );
      const next = nextDeliveryStatus(row.delivery_status, update.status);
      if (next === row.delivery_status) continue;
      const failed = next === 'failed';
      await client.query(
        `update messages set delivery_status = $3, delivery_error = coalesce($4, delivery_error),
                delivery_error_code = coalesce($5, delivery_error_code),
                delivery_failed_at = case when $3 = 'failed' then coalesce($6::timestamptz, now()) else delivery_failed_at end
          where workspace_id = $1 and id = $2`,
        [
          update.workspace_id,
          row.id,
          next,
          failed ? update.error : null,
          failed ? (update.error_code ?? null) : null,
          update.at ?? null,
        ],
      );
      if (failed) channels.push(row.channel);
    }
    return channels;
  });
  for (const channel of failedOn) {
    deliveryFailures.add(1, { channel, error_code: errorCodeLabel(update.error_code) });
  }
}
