import type { Bus } from '@inbox/bus';
import {
  AppError,
  type CommandPayload,
  type CommandResult,
  type EventData,
  errorMessage,
  errorTexts,
  type Integration,
} from '@inbox/contracts';
import { type OutboxRelay, type Pool, withTransaction, writeEvent } from '@inbox/db';
import { normalisePhone } from '../domain/phone.js';
import { ConversationStore } from '../store/conversations.js';

export interface SendMessageDeps {
  pool: Pool;
  bus: Bus;
  relay: OutboxRelay;
}

// Messages sent through the public API are attributed to an agent, as external send's default is.
const apiSenderType = 'agent' as const;

/**
 * send-message: contact and conversation found or created, the message stored as pending, sent through
 * the connector, then marked sent with `message.sent` written to the outbox in the same transaction.
 */
export async function sendMessage(
  deps: SendMessageDeps,
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

  const sent = await deliver(deps, workspace.id, integration, prepared.messageId, phone, command.message);

  await withTransaction(deps.pool, async (client) => {
    await new ConversationStore(client, workspace.id).markSent(
      prepared.messageId,
      sent.provider_message_id,
      sent.sent_at,
    );
    const data: EventData<'message.sent'> = {
      event: 'message.sent',
      workspace_id: workspace.id,
      conversation_id: prepared.conversation.conversation.id,
      message: { id: prepared.messageId, text: command.message, type: 'text' },
      status: { sender_type: apiSenderType },
      integration: { id: integration.id, provider: integration.provider },
    };
    await writeEvent(client, { type: 'message.sent', workspace_id: workspace.id, data });
  });
  deps.relay.wake();

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

async function deliver(
  deps: SendMessageDeps,
  workspaceId: string,
  integration: Integration,
  messageId: string,
  to: string,
  text: string,
) {
  try {
    return await deps.bus.request('cmd.connector.send-text', {
      workspace_id: workspaceId,
      integration_id: integration.id,
      message_id: messageId,
      to,
      text,
    });
  } catch (error) {
    await withTransaction(deps.pool, (client) =>
      new ConversationStore(client, workspaceId).markFailed(messageId, errorMessage(error)),
    );
    throw error;
  }
}
