import type { Bus } from '@inbox/bus';
import { AppError, errorMessage, type Provider } from '@inbox/contracts';
import { type OutboxRelay, type Pool, withTransaction } from '@inbox/db';
import { ConversationStore } from '../store/conversations.js';
import type { SentMessages } from '../store/sent-messages.js';

export interface OutboundDeps {
  pool: Pool;
  bus: Bus;
  relay: OutboxRelay;
  sent: SentMessages;
}

export interface OutboundMessage {
  workspaceId: string;
  conversationId: string;
  integration: { id: string; provider: Provider };
  messageId: string;
  /** The contact's phone; null for contacts of channels without phone numbers, named by `toUserId`. */
  to: string | null;
  toUserId?: string | null;
  text: string;
  senderType: 'human' | 'agent' | 'system';
}

/**
 * Sends a stored pending message through the connector, then marks it sent and writes `message.sent`
 * to the outbox in one transaction. A provider failure marks it failed and is rethrown for the caller.
 */
export async function deliverOutbound(
  deps: OutboundDeps,
  message: OutboundMessage,
  send: () => Promise<{ provider_message_id: string; sent_at: string }> = () =>
    deps.bus.request('cmd.connector.send-text', {
      workspace_id: message.workspaceId,
      integration_id: message.integration.id,
      message_id: message.messageId,
      to: message.to,
      ...(message.to === null && message.toUserId ? { to_user_id: message.toUserId } : {}),
      text: message.text,
    }),
) {
  let sent: { provider_message_id: string; sent_at: string };
  try {
    sent = await send();
  } catch (error) {
    // A timeout leaves the outcome unknown (the provider may yet accept it), as does an earlier attempt
    // of this message that never reported back (409): the message stays pending rather than failed.
    const unknownOutcome = error instanceof AppError && (error.status === 504 || error.status === 409);
    if (!unknownOutcome) {
      await withTransaction(deps.pool, (client) =>
        new ConversationStore(client, message.workspaceId).markFailed(
          message.messageId,
          error instanceof AppError ? (error.detail ?? error.message) : errorMessage(error),
        ),
      );
    }
    throw error;
  }
  // One statement marks it sent and writes its event, shared with the other sends of this turn.
  await deps.sent.record({
    workspaceId: message.workspaceId,
    conversationId: message.conversationId,
    integration: message.integration,
    messageId: message.messageId,
    text: message.text,
    senderType: message.senderType,
    providerMessageId: sent.provider_message_id,
    sentAt: sent.sent_at,
  });
  deps.relay.wake();
  return sent;
}
