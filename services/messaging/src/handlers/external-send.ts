import { AppError, type CommandPayload, type CommandResult, errorTexts } from '@inbox/contracts';
import { withTransaction } from '@inbox/db';
import { ConversationStore } from '../store/conversations.js';
import { deliverOutbound, type OutboundDeps } from './outbound-delivery.js';

/** external send: a message into an existing conversation of the workspace; creates nothing else. */
export async function externalSend(
  deps: OutboundDeps,
  command: CommandPayload<'cmd.messaging.external-send'>,
): Promise<CommandResult<'cmd.messaging.external-send'>> {
  const workspaceId = command.workspace_id;
  const senderType = command.sender_type ?? 'agent';
  const prepared = await withTransaction(deps.pool, async (client) => {
    const store = new ConversationStore(client, workspaceId);
    const conversation = await store.conversationForSend(command.conversation_id);
    if (!conversation) throw AppError.notFound(errorTexts.conversationNotFound);
    await store.reopen(conversation);
    const messageId = await store.addOutboundMessage({
      conversationId: conversation.id,
      text: command.text,
      senderType,
      senderName: command.sender_name,
    });
    return { conversation, messageId };
  });
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
  return {
    success: true,
    message_id: prepared.messageId,
    conversation_id: prepared.conversation.id,
    workspace_id: workspaceId,
    sent_at: sent.sent_at,
  };
}
