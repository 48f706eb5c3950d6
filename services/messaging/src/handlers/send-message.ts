import {
  AppError,
  type CommandPayload,
  type CommandResult,
  errorTexts,
  platformTexts,
} from '@inbox/contracts';
import { type PoolClient, type Queryable, withTransaction, writeEvent } from '@inbox/db';
import { eventPayloads } from '../domain/events.js';
import { normalisePhone } from '../domain/phone.js';
import { channelHasWindow, windowIsOpen } from '../domain/window.js';
import { type ConversationRow, ConversationStore } from '../store/conversations.js';
import { TeamStore } from '../store/team.js';
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
  if (command.agentId && !(await new TeamStore(deps.pool, workspace.id).exists('agent', command.agentId))) {
    throw AppError.badRequest(platformTexts.agentNotFound);
  }

  const integration = await deps.bus.request('cmd.connector.resolve-integration', {
    workspace_id: workspace.id,
    channel: command.channel,
    integration_id: command.integrationId,
  });

  // Decided before anything is written or sent: the provider would refuse it anyway.
  if (channelHasWindow(integration.channel)) {
    const lastInbound = await lastInboundAt(deps.pool, workspace.id, phone, integration.id);
    if (!windowIsOpen(lastInbound, new Date())) throw AppError.windowClosed();
  }

  const prepared = await withTransaction(deps.pool, async (client) => {
    const store = new ConversationStore(client, workspace.id);
    const contact = await store.upsertContact(phone, command.contactName);
    const conversation = await store.openConversation(contact.contact.id, integration);
    await store.reopen(conversation.conversation);
    if (command.agentId)
      await assignToAgent(client, workspace.id, conversation.conversation, command.agentId);
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

/**
 * Assigns the conversation to the AI agent named by `agentId`, emitting conversation.assigned in the same
 * transaction that stores the message, so it always precedes that message's message.sent.
 */
async function assignToAgent(
  client: PoolClient,
  workspaceId: string,
  conversation: ConversationRow,
  agentId: string,
) {
  if (conversation.assigned_to_type === 'agent' && conversation.assigned_to_id === agentId) return;
  const assignee = { type: 'agent' as const, id: agentId };
  await new ConversationStore(client, workspaceId).setAssignment(conversation, assignee);
  await writeEvent(client, {
    type: 'conversation.assigned',
    workspace_id: workspaceId,
    data: eventPayloads.assigned(workspaceId, conversation.id, assignee),
  });
}

async function lastInboundAt(db: Queryable, workspaceId: string, phone: string, integrationId: string) {
  const { rows } = await db.query<{ last_inbound_at: Date | null }>(
    `select c.last_inbound_at from conversations c join contacts k on k.id = c.contact_id
      where c.workspace_id = $1 and k.workspace_id = $1 and k.phone = $2 and c.integration_id = $3`,
    [workspaceId, phone, integrationId],
  );
  return rows[0]?.last_inbound_at ?? null;
}
