import { AppError, type CommandPayload, type CommandResult, errorTexts } from '@inbox/contracts';
import { withTransaction } from '@inbox/db';
import { normalisePhone } from '../domain/phone.js';
import { ConversationStore } from '../store/conversations.js';
import { deliverOutbound, type OutboundDeps } from './outbound-delivery.js';

// Messages sent through the public API are attributed to an agent, as external send's default is.
const apiSenderType = 'agent' as const;

/** send-message: contact and conversation found or created, the message stored as pending, then delivered. */
export async function sendMessage(
  deps: OutboundDeps,
  command: CommandPayload<'cmd.messaging.send-message'>,
): Promise<CommandResult<'cmd.messaging.send-message'>> {
  const { workspace } = command;
  const phone = normalisePhone(command.phone, workspace.default_country_code);
  if (!phone) throw AppError.badRequest(errorTexts.phoneInvalid);
  if (command.agentId) throw AppError.badRequest('agentId não é um agente deste workspace');

  const integration = await deps.bus.request('cmd.connector.resolve-integration', {
    workspace_id: workspace.id,
    channel: command.channel,
    integration_id: command.integrationId,
  });

  const prepared = await withTransaction(deps.pool, async (client) => {
    const store = new ConversationStore(client, workspace.id);
    const contact = await store.upsertContact(phone, command.contactName);
    const conversation = await store.openConversation(contact.contact.id, integration);
    await store.reopen(conversation.conversation);
    const messageId = await store.addOutboundMessage({
      conversationId: conversation.conversation.id,
      text: command.message,
      senderType: apiSenderType,
    });
    return { contact, conversation, messageId };
  });

  const sent = await deliverOutbound(deps, {
    workspaceId: workspace.id,
    conversationId: prepared.conversation.conversation.id,
    integration: { id: integration.id, provider: integration.provider },
    messageId: prepared.messageId,
    to: phone,
    text: command.message,
    senderType: apiSenderType,
  });

  return {
    success: true,
    conversationId: prepared.conversation.conversation.id,
    contactId: prepared.contact.contact.id,
    messageId: prepared.messageId,
    waMessageId: sent.provider_message_id,
    contactCreated: prepared.contact.created,
    conversationCreated: prepared.conversation.created,
    sent_at: sent.sent_at,
  };
}
