import {
  eventTypes,
  type InboundMessageEvent,
  type InboundStatusEvent,
  type InboundWatermarkEvent,
} from '@inbox/contracts';
import { type OutboxRelay, type Pool, withTransaction, writeEvent } from '@inbox/db';
import { meter } from '@inbox/telemetry';
import { type DeliveryStatus, nextDeliveryStatus, statusesBefore } from '../domain/delivery-status.js';
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
        : await store.upsertContact(
            await store.lockedStoredPhone(canonicalPhone(inbound.from)),
            inbound.name,
            {
              onlyIfEmpty: true,
            },
          );
    // A WhatsApp customer named by number may carry the channel's other id of them too (Meta's BSUID, the
    // LID): noted, their messages that name them by it alone (the number hidden) come to this contact.
    if (inbound.from !== null && inbound.from_user_id !== undefined)
      await store.noteUserId(contact.id, inbound.integration.channel, inbound.from_user_id);
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

/**
 * How long after the watermark a message may have been recorded sent and still be one it covers. The
 * provider's watermark is its own time of the last message read; we record a message sent when its answer
 * reaches us, a round trip later, on a clock that may differ by a little.
 */
const watermarkSlackMs = 5_000;
/** How far back a watermark reaches: a message older than this keeps the status it had. */
const watermarkReachDays = 30;
/**
 * How many of the conversation's messages before the watermark it reaches, whatever their kind: the ones
 * further back keep the status they had. Every read a user makes is a watermark, and a conversation a
 * tenant's own sends filled with a hundred thousand messages in a month made each of them read all of
 * those, in the lane other workspaces' messages wait in.
 */
export const watermarkReachMessages = 1_000;

/**
 * A provider's word that every message sent to a user up to a time was delivered or read: each such
 * outbound message of the user's conversation on the integration moves forward to it, in one statement.
 * Only messages created before the watermark (a message recorded sent after it was taken by the provider
 * after it) and within its reach, so a read costs at most the conversation's last thousand messages, not
 * its history.
 */
export async function applyWatermark(deps: InboundDeps, watermark: InboundWatermarkEvent): Promise<void> {
  await deps.pool.query(
    `update messages m set delivery_status = $5
       from conversations c
       join contacts k on k.id = c.contact_id and k.workspace_id = c.workspace_id
       cross join lateral (
         select r.id from messages r
          where r.conversation_id = c.id
            and r.created_at <= $6::timestamptz
            and r.created_at > $6::timestamptz - make_interval(days => $9)
          order by r.created_at desc limit $10) reached
      where k.workspace_id = $1 and k.provider_channel = $3 and k.provider_user_id = $4
        and c.workspace_id = $1 and c.integration_id = $2
        and m.id = reached.id
        and m.workspace_id = $1 and m.conversation_id = c.id and m.direction = 'outbound' and m.status = 'sent'
        and m.sent_at <= $6::timestamptz + make_interval(secs => $8)
        and (m.delivery_status is null or m.delivery_status = any($7::text[]))`,
    [
      watermark.workspace_id,
      watermark.integration_id,
      watermark.channel,
      watermark.user_id,
      watermark.status,
      watermark.up_to,
      statusesBefore(watermark.status),
      watermarkSlackMs / 1_000,
      watermarkReachDays,
      watermarkReachMessages,
    ],
  );
}
