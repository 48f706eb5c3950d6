import { AppError, errorTexts, platformTexts } from '@inbox/contracts';
import type { OutboundGuard } from '@inbox/outbound-http';
import type { Logger } from '@inbox/service-kit';
import { type ProviderCall, ProviderError } from '../adapters/index.js';
import type { IntegrationStore, StoredIntegration } from '../store/integrations.js';

export interface SendOnceDeps {
  store: IntegrationStore;
  guard: OutboundGuard;
  logger: Logger;
  providerTimeoutMs: number;
}

/**
 * One outbound message through its integration's provider, once per message id: a repeated command
 * answers what the first one got. The integration must exist and be connected; provider failures
 * become the API's 502 naming the channel (the provider's own reason kept as the error's detail); a
 * provider that does not answer in time gives 504, since it may still have accepted the message.
 */
export async function sendOnce(
  { store, guard, logger, providerTimeoutMs }: SendOnceDeps,
  ids: { workspaceId: string; integrationId: string; messageId: string },
  send: (stored: StoredIntegration, call: ProviderCall) => Promise<{ providerMessageId: string }>,
): Promise<{ provider_message_id: string; sent_at: string }> {
  const previous = await store.findSend(ids.workspaceId, ids.messageId);
  if (previous)
    return { provider_message_id: previous.provider_message_id, sent_at: previous.sent_at.toISOString() };
  const stored = await store.get(ids.workspaceId, ids.integrationId);
  if (!stored) throw AppError.notFound(platformTexts.integrationNotFound);
  if (stored.integration.status !== 'connected')
    throw AppError.badRequest(errorTexts.integrationNotConnected);
  const signal = AbortSignal.timeout(providerTimeoutMs);
  try {
    const { providerMessageId } = await send(stored, { guard, logger, signal });
    const sentAt = new Date();
    await store.recordSend(ids.workspaceId, stored.integration.id, ids.messageId, providerMessageId, sentAt);
    return { provider_message_id: providerMessageId, sent_at: sentAt.toISOString() };
  } catch (error) {
    if (!(error instanceof ProviderError)) throw error;
    const { channel, id } = stored.integration;
    if (signal.aborted) {
      // The request may have reached the provider and been accepted: the outcome is unknown, so the
      // message is not called failed (the caller keeps it pending) and the answer says so.
      logger.warn({ err: error, channel, integration_id: id }, 'provider send timed out: outcome unknown');
      throw new AppError(504, { error: platformTexts.providerTimedOut(channel) }, { cause: error });
    }
    logger.warn({ err: error, channel, integration_id: id }, 'provider send failed');
    throw new AppError(502, { error: platformTexts.providerFailed(channel) }, { cause: error });
  }
}
