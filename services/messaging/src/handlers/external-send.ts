import {
  AppError,
  type CommandPayload,
  type CommandResult,
  errorTexts,
  externalSendReaches,
  platformTexts,
} from '@inbox/contracts';
import { withTransaction } from '@inbox/db';
import { ConversationStore } from '../store/conversations.js';
import { messageOfKey, retryIfRefused } from '../store/keyed-messages.js';
import { deliverOutbound, type OutboundDeps } from './outbound-delivery.js';

/** external send: a message into an existing conversation of the workspace; creates nothing else. */
export async function externalSend(
  deps: OutboundDeps,
  command: CommandPayload<'cmd.messaging.external-send'>,
): Promise<CommandResult<'cmd.messaging.external-send'>> {
  const workspaceId = command.workspace_id;
  const senderType = command.sender_type ?? 'agent';
  const key = command.idempotency_key;
  // A retry of a request whose first attempt stored its message continues that message.
  const earlier = key ? await messageOfKey(deps.pool, workspaceId, key) : undefined;
  const prepared = await withTransaction(deps.pool, async (client) => {
    const store = new ConversationStore(client, workspaceId);
    const conversation = await store.conversationForSend(earlier?.conversation_id ?? command.conversation_id);
    if (!conversation) throw AppError.notFound(errorTexts.conversationNotFound);
    // The public API sends only on the channels the spec lists for it (a person's reply in the panel,
    // `human`, goes to any channel the connector serves).
    if (senderType !== 'human' && !externalSendReaches(conversation.provider))
      throw AppError.badRequest(platformTexts.channelNotSupported(conversation.provider));
    if (earlier) return { conversation, messageId: earlier.id };
    await store.reopen(conversation);
    const messageId = await store.addOutboundMessage({
      conversationId: conversation.id,
      text: command.text,
      senderType,
      senderName: command.sender_name,
      idempotencyKey: key,
    });
    return { conversation, messageId };
  });
  if (earlier?.status === 'sent' && earlier.sent_at)
    return answer(workspaceId, prepared.conversation.id, prepared.messageId, earlier.sent_at.toISOString());
  if (earlier) await retryIfRefused(deps.pool, earlier);
  const sent = await deliverOutbound(deps, {
    workspaceId,
    conversationId: prepared.conversation.id,
    integration: { id: prepared.conversation.integration_id, provider: prepared.conversation.provider },
    messageId: prepared.messageId,
    to: prepared.conversation.phone,
    toUserId: prepared.conversation.provider_user_id,
    text: command.text,
    senderType,
  });
  return answer(workspaceId, prepared.conversation.id, prepared.messageId, sent.sent_at);
}

function answer(workspaceId: string, conversationId: string, messageId: string, sentAt: string) {
  return {
    success: true as const,
    message_id: messageId,
    conversation_id: conversationId,
    workspace_id: workspaceId,
    sent_at: sentAt,
  };
}
