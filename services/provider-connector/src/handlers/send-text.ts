import {
  AppError,
  type CommandPayload,
  type CommandResult,
  errorTexts,
  platformTexts,
} from '@inbox/contracts';
import type { Logger } from '@inbox/service-kit';
import { adapterFor, ProviderError } from '../adapters/index.js';
import type { IntegrationStore } from '../store/integrations.js';

export interface SendTextDeps {
  store: IntegrationStore;
  logger: Logger;
  providerTimeoutMs: number;
}

/** Sends one text through the integration's provider, once per message id. */
export async function sendText(
  { store, logger, providerTimeoutMs }: SendTextDeps,
  command: CommandPayload<'cmd.connector.send-text'>,
): Promise<CommandResult<'cmd.connector.send-text'>> {
  const previous = await store.findSend(command.workspace_id, command.message_id);
  if (previous)
    return { provider_message_id: previous.provider_message_id, sent_at: previous.sent_at.toISOString() };

  const stored = await store.get(command.workspace_id, command.integration_id);
  if (!stored) throw AppError.notFound(platformTexts.integrationNotFound);
  if (stored.integration.status !== 'connected')
    throw AppError.badRequest(errorTexts.integrationNotConnected);
  const adapter = adapterFor(stored.integration.channel);
  if (!adapter) throw AppError.badRequest(platformTexts.channelNotSupported(stored.integration.channel));

  try {
    const { providerMessageId } = await adapter.sendText(
      stored.config,
      { to: command.to.replace(/^\+/, ''), text: command.text },
      AbortSignal.timeout(providerTimeoutMs),
    );
    const sentAt = new Date();
    await store.recordSend(
      command.workspace_id,
      stored.integration.id,
      command.message_id,
      providerMessageId,
      sentAt,
    );
    return { provider_message_id: providerMessageId, sent_at: sentAt.toISOString() };
  } catch (error) {
    if (error instanceof ProviderError) {
      logger.warn(
        { err: error, channel: stored.integration.channel, integration_id: stored.integration.id },
        'provider send failed',
      );
      throw new AppError(
        502,
        { error: platformTexts.providerFailed(stored.integration.channel) },
        { cause: error },
      );
    }
    throw error;
  }
}
