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
    // Refused outright, so nothing was sent, even when the deadline passed meanwhile.
    if (error.refusal === 'credentials_rejected' || error.refusal === 'rate_limited') {
      throw await providerRefused(store, logger, stored, error, ids.workspaceId);
    }
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

/**
 * The answer to a provider's refusal the connector acts on: credentials it no longer takes disconnect the
 * integration (with the reason, for the admin API), and a rate limit tells the caller to wait. Both are
 * the API's 502 naming the channel, with the provider's code.
 */
export async function providerRefused(
  store: IntegrationStore,
  logger: Logger,
  stored: StoredIntegration,
  error: ProviderError,
  workspaceId: string,
): Promise<AppError> {
  const { channel, id } = stored.integration;
  const code = error.providerCode === undefined ? {} : { meta_error_code: error.providerCode };
  if (error.refusal === 'credentials_rejected') {
    if (await store.markCredentialsRejected(workspaceId, id)) {
      logger.warn(
        { err: error, channel, integration_id: id, workspace_id: workspaceId },
        'provider refused the integration credentials: integration disconnected',
      );
    }
    return new AppError(
      502,
      { error: platformTexts.providerCredentialsRejected(channel), ...code },
      { cause: error },
    );
  }
  logger.warn({ err: error, channel, integration_id: id }, 'provider rate limit: send refused');
  return new AppError(502, { error: platformTexts.providerRateLimited(channel), ...code }, { cause: error });
}
