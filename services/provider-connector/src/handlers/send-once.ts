import { AppError, errorTexts, platformTexts, sendsInFlightPerWorkspace } from '@inbox/contracts';
import { Deadline, type OutboundGuard } from '@inbox/outbound-http';
import type { Logger } from '@inbox/service-kit';
import type { ReplyContexts, VisitorDelivery } from '../adapters/channel-adapter.js';
import { type ProviderCall, ProviderError } from '../adapters/index.js';
import { storableProviderId } from '../domain/inbound-bounds.js';
import type { IntegrationStore, StoredIntegration } from '../store/integrations.js';
import { oauthTokens } from '../store/oauth-tokens.js';
import { WorkspaceTurns } from './workspace-turns.js';

export interface SendOnceDeps {
  store: IntegrationStore;
  guard: OutboundGuard;
  logger: Logger;
  providerTimeoutMs: number;
  /** Live chat's own delivery, for the integration and message being sent. */
  visitors?: (integrationId: string, messageId: string) => VisitorDelivery;
  /** Where replies to an integration's senders go, for providers whose replies answer a thread. */
  replyContexts?: (integrationId: string) => ReplyContexts;
  /** Provider calls in flight by workspace; the process's own unless given. */
  sendTurns?: WorkspaceTurns;
}

// The process's own; tests give theirs.
const processSendTurns = new WorkspaceTurns(sendsInFlightPerWorkspace, 0);

/**
 * One outbound message through its integration's provider, at most one provider call per message id:
 * the attempt is recorded before the call, so a repeated command answers what the first one got, or,
 * when that attempt's outcome is unknown (its process died during the call, or the provider did not
 * answer in time), a 409 naming the message instead of a second call. The integration must exist and
 * be connected; provider failures become the API's 502 naming the channel (the provider's own reason
 * kept as the error's detail, the attempt forgotten since nothing was sent); a provider that does not
 * answer in time gives 504, since it may still have accepted the message.
 */
export async function sendOnce(
  deps: SendOnceDeps,
  ids: { workspaceId: string; integrationId: string; messageId: string },
  send: (stored: StoredIntegration, call: ProviderCall) => Promise<{ providerMessageId: string }>,
): Promise<{ provider_message_id: string; sent_at: string }> {
  const { store, sendTurns = processSendTurns } = deps;
  const stored = await store.forSend(ids.workspaceId, ids.integrationId);
  if (stored?.integration.status !== 'connected') {
    // A repeat of a message sent before the integration went away still gets the first answer.
    const previous = await answerOfEarlierAttempt(store, ids);
    if (previous) return previous;
    if (!stored) throw AppError.notFound(platformTexts.integrationNotFound);
    throw AppError.badRequest(errorTexts.integrationNotConnected);
  }
  const release = await sendTurns.take(ids.workspaceId);
  if (!release) {
    // A repeat of a message already sent, or of one whose call never reported back, gets that answer:
    // "nothing was sent" is the truth only for a message never tried.
    const earlier = await answerOfEarlierAttempt(store, ids);
    if (earlier) return earlier;
    throw new AppError(503, {
      error: platformTexts.providerSendsBusy(stored.integration.channel, sendTurns.perWorkspace),
    });
  }
  try {
    return await sendHolding(deps, ids, stored, send);
  } finally {
    release();
  }
}

/** sendOnce with the workspace's turn taken. */
async function sendHolding(
  { store, guard, logger, providerTimeoutMs, visitors, replyContexts }: SendOnceDeps,
  ids: { workspaceId: string; integrationId: string; messageId: string },
  stored: StoredIntegration,
  send: (stored: StoredIntegration, call: ProviderCall) => Promise<{ providerMessageId: string }>,
): Promise<{ provider_message_id: string; sent_at: string }> {
  // Recording the attempt is also how an earlier one is found: one round trip on the usual path.
  if (!(await store.beginSend(ids.workspaceId, stored.integration.id, ids.messageId))) {
    const earlier = await answerOfEarlierAttempt(store, ids);
    if (earlier) return earlier;
  }
  const deadline = new Deadline(providerTimeoutMs);
  const signal = deadline.signal;
  try {
    const answered = await send(stored, {
      guard,
      workspaceId: ids.workspaceId,
      logger,
      signal,
      oauth: oauthTokens(store, ids.workspaceId, stored.integration.id, providerTimeoutMs, { signal }),
      messageId: ids.messageId,
      ...(visitors ? { visitors: visitors(stored.integration.id, ids.messageId) } : {}),
      ...(replyContexts ? { replyContexts: replyContexts(stored.integration.id) } : {}),
    });
    // As a status callback's id is stored (a digest past 256 characters), so that the two still match:
    // a provider may answer any id, and one too long for an index entry failed the record.
    const providerMessageId = storableProviderId(answered.providerMessageId);
    const sentAt = new Date();
    await store.recordSend(ids.workspaceId, stored.integration.id, ids.messageId, providerMessageId, sentAt);
    return { provider_message_id: providerMessageId, sent_at: sentAt.toISOString() };
  } catch (error) {
    // Refused before anything left (an incomplete configuration): nothing was sent.
    if (error instanceof AppError) await store.forgetAttempt(ids.workspaceId, ids.messageId);
    // Anything else unexpected may have happened after the provider took the message: the attempt stays.
    if (!(error instanceof ProviderError)) throw error;
    const { channel, id } = stored.integration;
    // Refused outright, so nothing was sent, even when the deadline passed meanwhile.
    if (
      error.refusal === 'credentials_rejected' ||
      error.refusal === 'rate_limited' ||
      error.refusal === 'recipient_unknown' ||
      error.refusal === 'recipient_unreachable'
    ) {
      await store.forgetAttempt(ids.workspaceId, ids.messageId);
      throw await providerRefused(store, logger, stored, error, ids.workspaceId);
    }
    if (signal.aborted && !error.unsent) {
      // The request may have reached the provider and been accepted: the outcome is unknown, so the
      // message is not called failed (the caller keeps it pending) and the answer says so.
      logger.warn({ err: error, channel, integration_id: id }, 'provider send timed out: outcome unknown');
      throw new AppError(504, { error: platformTexts.providerTimedOut(channel) }, { cause: error });
    }
    logger.warn({ err: error, channel, integration_id: id }, 'provider send failed');
    await store.forgetAttempt(ids.workspaceId, ids.messageId);
    throw new AppError(502, { error: platformTexts.providerFailed(channel) }, { cause: error });
  } finally {
    deadline.clear();
  }
}

/** The answer an earlier attempt left: its result, or a 409 when its outcome is unknown; none when there was none. */
async function answerOfEarlierAttempt(
  store: IntegrationStore,
  ids: { workspaceId: string; messageId: string },
): Promise<{ provider_message_id: string; sent_at: string } | undefined> {
  const previous = await store.findSend(ids.workspaceId, ids.messageId);
  if (!previous) return undefined;
  if (previous.provider_message_id !== null && previous.sent_at !== null)
    return { provider_message_id: previous.provider_message_id, sent_at: previous.sent_at.toISOString() };
  throw new AppError(409, { error: platformTexts.sendOutcomeUnknown(ids.messageId) });
}

/**
 * The answer to a provider's refusal the connector acts on: credentials it no longer takes disconnect the
 * integration (with the reason, for the admin API), a rate limit tells the caller to wait, and a number
 * with no account says sending again is pointless. Each is the API's 502 naming the channel, with the
 * provider's code where it has one.
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
  if (error.refusal === 'recipient_unknown') {
    logger.info({ err: error, channel, integration_id: id }, 'provider knows no account of the recipient');
    return new AppError(502, { error: platformTexts.providerRecipientUnknown(channel) }, { cause: error });
  }
  if (error.refusal === 'recipient_unreachable') {
    logger.info(
      { err: error, channel, integration_id: id },
      'the recipient takes no messages from the account',
    );
    return new AppError(
      502,
      { error: platformTexts.providerRecipientUnreachable(channel) },
      { cause: error },
    );
  }
  if (error.refusal === 'rate_limited') {
    logger.warn({ err: error, channel, integration_id: id }, 'provider rate limit: send refused');
    return new AppError(
      502,
      { error: platformTexts.providerRateLimited(channel), ...code },
      { cause: error },
    );
  }
  logger.warn({ err: error, channel, integration_id: id }, 'provider refused the send');
  return new AppError(502, { error: platformTexts.providerFailed(channel), ...code }, { cause: error });
}
