import {
  AppError,
  type CommandPayload,
  type CommandResult,
  errorTexts,
  externalSendChannels,
  platformTexts,
  providers,
  replyRules,
} from '@inbox/contracts';
import { withTransaction } from '@inbox/db';
import { windowIsOpen, windowMs } from '../domain/window.js';
import { ConversationStore, type ReplyAllowance, type SendRecipient } from '../store/conversations.js';
import {
  isUniqueViolation,
  type KeyedMessage,
  messageOfKey,
  retryIfRefused,
} from '../store/keyed-messages.js';
import type { Replies } from '../store/replies.js';
import { deliverOutbound, type OutboundDeps } from './outbound-delivery.js';

export interface ExternalSendDeps extends OutboundDeps {
  replies: Replies;
}

/** external send: a message into an existing conversation of the workspace; creates nothing else. */
export async function externalSend(
  deps: ExternalSendDeps,
  command: CommandPayload<'cmd.messaging.external-send'>,
): Promise<CommandResult<'cmd.messaging.external-send'>> {
  const workspaceId = command.workspace_id;
  const senderType = command.sender_type ?? 'agent';
  const key = command.idempotency_key;
  // A retry of a request whose first attempt stored its message continues that message.
  let earlier = key ? await messageOfKey(deps.pool, workspaceId, key) : undefined;
  const reply = {
    text: command.text,
    senderType,
    senderName: command.sender_name,
    ...(key ? { idempotencyKey: key } : {}),
  };
  const prepare = async (continuing: KeyedMessage | undefined) => {
    if (!continuing) {
      // Read under its lock, checked, and stored in one statement (shared with this turn's other replies):
      // no lock held across round trips, so replies into one busy conversation do not queue for long.
      const stored = await deps.replies.add({
        ...reply,
        workspaceId,
        conversationId: command.conversation_id,
        rules: replyAllowance(senderType),
      });
      if (!stored) throw AppError.notFound(errorTexts.conversationNotFound);
      if (stored.messageId) return { conversation: stored.conversation, messageId: stored.messageId };
      // Nothing written: the rules refused it, answered here with the reason.
      checkReply(stored.conversation, senderType);
    }
    // Continuing a message, under its lock (and, should checkReply ever let by a reply the statement
    // refused, storing it here).
    return withTransaction(deps.pool, async (client) => {
      const store = new ConversationStore(client, workspaceId);
      const conversation = await store.conversationForSend(
        continuing?.conversation_id ?? command.conversation_id,
      );
      if (!conversation) throw AppError.notFound(errorTexts.conversationNotFound);
      if (continuing) return { conversation, messageId: continuing.id };
      checkReply(conversation, senderType);
      await store.reopen(conversation);
      const messageId = await store.addOutboundMessage({ conversationId: conversation.id, ...reply });
      return { conversation, messageId };
    });
  };
  let prepared: Awaited<ReturnType<typeof prepare>>;
  try {
    prepared = await prepare(earlier);
  } catch (error) {
    // A request with the same key stored its message meanwhile (the unique key refused this one, as when
    // the gateway's record of the key was lost): continue that message, never a second one.
    const raced =
      !earlier && key && isUniqueViolation(error)
        ? await messageOfKey(deps.pool, workspaceId, key)
        : undefined;
    if (!raced) throw error;
    earlier = raced;
    prepared = await prepare(raced);
  }
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

const allowances = {
  human: allowanceFor('human'),
  other: allowanceFor('agent'),
};

/** Which providers refuse a reply from this sender, and which take one only inside the window. */
function allowanceFor(senderType: string): Omit<ReplyAllowance, 'windowOpenAfter'> {
  const rulesOf = (provider: string) => replyRules(provider)!;
  return {
    refusingProviders: providers.filter((provider) => !allowedBy(rulesOf(provider), senderType)),
    windowedProviders: providers.filter((provider) => rulesOf(provider).windowWithoutTemplates),
  };
}

/** checkReply's rules, for a statement to apply (addRepliesIfAllowed) as they stand now. */
function replyAllowance(senderType: string): ReplyAllowance {
  return {
    ...allowances[senderType === 'human' ? 'human' : 'other'],
    windowOpenAfter: new Date(Date.now() - windowMs),
  };
}

function allowedBy(rules: NonNullable<ReturnType<typeof replyRules>>, senderType: string): boolean {
  return senderType === 'human' ? rules.panelReply : rules.externalSend;
}

/**
 * Decided before anything is written or sent. External send reaches the channels the spec lists; a
 * person of the team (`human`, the panel's replies) may also reply on channels the descriptor allows.
 * Where the provider takes no reply once its window closes and has no template to reopen it, the window
 * is checked here, so the refusal names the reason rather than the provider's code.
 */
function checkReply(conversation: SendRecipient, senderType: string): void {
  const rules = replyRules(conversation.provider);
  if (!rules) return;
  if (!allowedBy(rules, senderType))
    throw AppError.badRequest(platformTexts.externalSendChannel(conversation.provider, externalSendChannels));
  if (rules.windowWithoutTemplates && !windowIsOpen(conversation.last_inbound_at, new Date()))
    throw AppError.badRequest(platformTexts.replyWindowClosed(conversation.provider));
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
