import type { Integration, SendMessageChannel } from '@inbox/contracts';
import {
  AppError,
  type CommandPayload,
  type CommandResult,
  errorTexts,
  eventTypes,
  platformTexts,
} from '@inbox/contracts';
import { type PoolClient, type Queryable, withTransaction, writeEvent } from '@inbox/db';
import { eventPayloads } from '../domain/events.js';
import { normalisePhone, twinLine } from '../domain/phone.js';
import { channelHasWindow, windowIsOpen } from '../domain/window.js';
import { type ConversationRow, ConversationStore } from '../store/conversations.js';
import {
  isUniqueViolation,
  type KeyedMessage,
  messageOfKey,
  retryIfRefused,
} from '../store/keyed-messages.js';
import { TeamStore } from '../store/team.js';
import { deliverOutbound, type OutboundDeps } from './outbound-delivery.js';

// Messages sent through the public API are attributed to an agent, as external send's default is.
const apiSenderType = 'agent' as const;

export interface Recipient {
  workspace: CommandPayload<'cmd.messaging.send-message'>['workspace'];
  phone: string;
  agentId?: string | null;
  contactName?: string | null;
}

/** The sender's checks that come before any write: a valid phone, a known agent, the integration. */
async function resolveRecipient(
  deps: OutboundDeps,
  input: {
    workspace: Recipient['workspace'];
    phone: string;
    agentId?: string | null;
    channel: SendMessageChannel;
    integrationId?: string | null;
  },
) {
  const normalised = normalisePhone(input.phone, input.workspace.default_country_code);
  if (!normalised) throw AppError.badRequest(errorTexts.phoneInvalid);
  const phone = await new ConversationStore(deps.pool, input.workspace.id).storedPhone(normalised);
  if (input.agentId && !(await new TeamStore(deps.pool, input.workspace.id).exists('agent', input.agentId))) {
    throw AppError.badRequest(platformTexts.agentNotFound);
  }
  const integration = await deps.bus.request('cmd.connector.resolve-integration', {
    workspace_id: input.workspace.id,
    channel: input.channel,
    integration_id: input.integrationId,
  });
  return { phone, integration };
}

/**
 * Contact and conversation found or created (reopened, assigned to `agentId`), the message stored pending.
 * A number with a twin form is looked up again under its line's lock (lockedStoredPhone): the first lookup
 * ran before the integration was resolved, and a first reply in the other form may have come in since.
 */
export async function storeOutbound(
  deps: Pick<OutboundDeps, 'pool'>,
  recipient: Recipient,
  integration: Integration,
  text: string,
  idempotencyKey?: string,
) {
  const workspaceId = recipient.workspace.id;
  const twin = twinLine(recipient.phone) !== undefined;
  // Without an assignment to write (and announce) along, or a twin to lock, one statement does it all.
  if (!recipient.agentId && !twin)
    return new ConversationStore(deps.pool, workspaceId).addOutboundToPhone(
      recipient.phone,
      recipient.contactName,
      integration,
      { text, senderType: apiSenderType, idempotencyKey },
    );
  return withTransaction(deps.pool, async (client) => {
    const store = new ConversationStore(client, workspaceId);
    const phone = twin ? await store.lockedStoredPhone(recipient.phone) : recipient.phone;
    if (!recipient.agentId)
      return store.addOutboundToPhone(phone, recipient.contactName, integration, {
        text,
        senderType: apiSenderType,
        idempotencyKey,
      });
    const contact = await store.upsertContact(phone, recipient.contactName);
    const conversation = await store.openConversation(contact.contact.id, integration);
    await store.reopen(conversation.conversation);
    await assignToAgent(client, workspaceId, conversation.conversation, recipient.agentId);
    const messageId = await store.addOutboundMessage({
      conversationId: conversation.conversation.id,
      text,
      senderType: apiSenderType,
      idempotencyKey,
      firstAnswer: { contactCreated: contact.created, conversationCreated: conversation.created },
    });
    return { contact, conversation, messageId };
  });
}

function answer(
  prepared: Awaited<ReturnType<typeof storeOutbound>>,
  sent: { provider_message_id: string; sent_at: string },
) {
  return {
    success: true as const,
    conversationId: prepared.conversation.conversation.id,
    contactId: prepared.contact.contact.id,
    messageId: prepared.messageId,
    waMessageId: sent.provider_message_id,
    contactCreated: prepared.contact.created,
    conversationCreated: prepared.conversation.created,
    sent_at: sent.sent_at,
  };
}

/** send-message: contact and conversation found or created, the message stored as pending, then delivered. */
export async function sendMessage(
  deps: OutboundDeps,
  command: CommandPayload<'cmd.messaging.send-message'>,
): Promise<CommandResult<'cmd.messaging.send-message'>> {
  const { workspace, idempotency_key: key } = command;
  // A retry of a request whose first attempt stored its message: that message, never a second one.
  const earlier = key ? await messageOfKey(deps.pool, workspace.id, key) : undefined;
  if (earlier) return resumeSend(deps, earlier);
  const { phone, integration } = await resolveRecipient(deps, { ...command, workspace });

  // Decided before anything is written or sent: the provider would refuse it anyway.
  if (channelHasWindow(integration.channel)) {
    const lastInbound = await lastInboundAt(deps.pool, workspace.id, phone, integration.id);
    if (!windowIsOpen(lastInbound, new Date())) throw AppError.windowClosed();
  }

  const recipient = { workspace, phone, agentId: command.agentId, contactName: command.contactName };
  let prepared: Awaited<ReturnType<typeof storeOutbound>>;
  try {
    prepared = await storeOutbound(deps, recipient, integration, command.message, key);
  } catch (error) {
    // The first attempt stored it meanwhile (the unique key refused this one): continue that one.
    const raced =
      key && isUniqueViolation(error) ? await messageOfKey(deps.pool, workspace.id, key) : undefined;
    if (raced) return resumeSend(deps, raced);
    throw error;
  }
  const sent = await deliverOutbound(deps, {
    workspaceId: workspace.id,
    conversationId: prepared.conversation.conversation.id,
    integration: { id: integration.id, provider: integration.provider },
    messageId: prepared.messageId,
    to: phone,
    text: command.message,
    senderType: apiSenderType,
  });
  return answer(prepared, sent);
}

/**
 * send-template: the template is checked against the connector's catalogue and rendered before anything
 * is written; the stored message (and message.sent) carries the rendered body. No 24-hour window:
 * templates are how a conversation outside it is opened.
 */
export async function sendTemplate(
  deps: OutboundDeps,
  command: CommandPayload<'cmd.messaging.send-template'>,
): Promise<CommandResult<'cmd.messaging.send-template'>> {
  const { workspace, idempotency_key: key } = command;
  const template = {
    name: command.templateName,
    language: command.language,
    variables: command.variables ?? [],
    headerMedia: command.headerMedia ?? null,
    buttons: command.buttons ?? null,
  };
  const sendTemplateCall = (integrationId: string, messageId: string, to: string) => () =>
    deps.bus.request('cmd.connector.send-template', {
      workspace_id: workspace.id,
      integration_id: integrationId,
      message_id: messageId,
      to,
      template,
    });
  const earlier = key ? await messageOfKey(deps.pool, workspace.id, key) : undefined;
  if (earlier)
    return {
      ...(await resumeSend(
        deps,
        earlier,
        sendTemplateCall(earlier.integration_id, earlier.id, earlier.phone),
      )),
      template: templateEcho(template),
    };
  const { phone, integration } = await resolveRecipient(deps, { ...command, workspace });
  const { rendered_text } = await deps.bus.request('cmd.connector.prepare-template', {
    workspace_id: workspace.id,
    integration_id: integration.id,
    template,
  });
  const recipient = { workspace, phone, agentId: command.agentId, contactName: command.contactName };
  let prepared: Awaited<ReturnType<typeof storeOutbound>>;
  try {
    prepared = await storeOutbound(deps, recipient, integration, rendered_text, key);
  } catch (error) {
    const raced =
      key && isUniqueViolation(error) ? await messageOfKey(deps.pool, workspace.id, key) : undefined;
    if (raced)
      return {
        ...(await resumeSend(deps, raced, sendTemplateCall(raced.integration_id, raced.id, raced.phone))),
        template: templateEcho(template),
      };
    throw error;
  }
  const sent = await deliverOutbound(
    deps,
    {
      workspaceId: workspace.id,
      conversationId: prepared.conversation.conversation.id,
      integration: { id: integration.id, provider: integration.provider },
      messageId: prepared.messageId,
      to: phone,
      text: rendered_text,
      senderType: apiSenderType,
    },
    sendTemplateCall(integration.id, prepared.messageId, phone),
  );
  return { ...answer(prepared, sent), template: templateEcho(template) };
}

/** The template part of send-template's answer: what was asked, in the spec's echo shape. */
function templateEcho(template: {
  name: string;
  language: string;
  variables: Array<string | number>;
  headerMedia: CommandPayload<'cmd.messaging.send-template'>['headerMedia'] | null;
  buttons: CommandPayload<'cmd.messaging.send-template'>['buttons'] | null;
}) {
  return {
    name: template.name,
    language: template.language,
    variables: template.variables,
    headerMedia: template.headerMedia
      ? {
          type: template.headerMedia.type,
          link: template.headerMedia.link,
          ...(template.headerMedia.filename ? { filename: template.headerMedia.filename } : {}),
        }
      : null,
    buttons: template.buttons
      ? template.buttons.map((b) =>
          // The gateway's check gives a url button its text and a quick_reply button its payload.
          b.type === 'url'
            ? { index: b.index, type: b.type, text: b.text! }
            : { index: b.index, type: b.type, payload: b.payload! },
        )
      : null,
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
  await writeEvent(
    client,
    eventTypes.conversationAssigned,
    eventPayloads.assigned(workspaceId, conversation.id, assignee),
  );
}

async function lastInboundAt(db: Queryable, workspaceId: string, phone: string, integrationId: string) {
  const { rows } = await db.query<{ last_inbound_at: Date | null }>(
    `select c.last_inbound_at from conversations c join contacts k on k.id = c.contact_id
      where c.workspace_id = $1 and k.workspace_id = $1 and k.phone = $2 and c.integration_id = $3`,
    [workspaceId, phone, integrationId],
  );
  return rows[0]?.last_inbound_at ?? null;
}

/**
 * A retry's answer from its first attempt's message: the first answer again when it was sent; otherwise
 * that same message delivered (the connector calls the provider at most once per message, answering
 * what it got, or 409 when an earlier call's outcome is unknown).
 */
async function resumeSend(
  deps: OutboundDeps,
  message: KeyedMessage,
  send?: () => Promise<{ provider_message_id: string; sent_at: string }>,
) {
  const first = message.first_answer ?? { contactCreated: false, conversationCreated: false };
  const reply = (sent: { provider_message_id: string; sent_at: string }) => ({
    success: true as const,
    conversationId: message.conversation_id,
    contactId: message.contact_id,
    messageId: message.id,
    waMessageId: sent.provider_message_id,
    contactCreated: first.contactCreated,
    conversationCreated: first.conversationCreated,
    sent_at: sent.sent_at,
  });
  if (message.status === 'sent' && message.provider_message_id && message.sent_at)
    return reply({
      provider_message_id: message.provider_message_id,
      sent_at: message.sent_at.toISOString(),
    });
  await retryIfRefused(deps.pool, message);
  const sent = await deliverOutbound(
    deps,
    {
      workspaceId: message.workspace_id,
      conversationId: message.conversation_id,
      integration: { id: message.integration_id, provider: message.provider },
      messageId: message.id,
      to: message.phone,
      text: message.text,
      senderType: apiSenderType,
    },
    send,
  );
  return reply(sent);
}
