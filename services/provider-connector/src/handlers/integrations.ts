import {
  AppError,
  type CommandPayload,
  type CommandResult,
  errorTexts,
  platformTexts,
} from '@inbox/contracts';
import { adapterFor } from '../adapters/index.js';
import type { IntegrationStore, StoredIntegration } from '../store/integrations.js';
import { inboundPath } from './inbound.js';

export interface CreateIntegrationDeps {
  store: IntegrationStore;
  publicConnectorUrl: string;
  providerTimeoutMs: number;
  afterCreate?: (created: StoredIntegration) => Promise<unknown>;
}

/**
 * Stores the integration (credentials sealed) and registers its inbound URL with the provider; an
 * integration the provider refused to register is removed again, so "connected" means reachable.
 */
export async function createIntegration(
  { store, publicConnectorUrl, providerTimeoutMs, afterCreate }: CreateIntegrationDeps,
  command: CommandPayload<'cmd.connector.create-integration'>,
): Promise<CommandResult<'cmd.connector.create-integration'>> {
  const adapter = adapterFor(command.channel);
  if (!adapter) throw AppError.badRequest(platformTexts.channelNotSupported(command.channel));
  const config = adapter.config.safeParse(command.config);
  if (!config.success) throw AppError.badRequest(config.error.issues[0]?.message ?? 'config inválido');
  const stored = await store.create(command.workspace_id, {
    channel: command.channel,
    name: command.name,
    config: config.data,
    accountId: adapter.accountId(config.data),
  });
  const callbackUrl = new URL(
    inboundPath(command.channel, stored.integration.id),
    publicConnectorUrl,
  ).toString();
  try {
    await adapter.registerInbound(stored.config, callbackUrl, AbortSignal.timeout(providerTimeoutMs));
  } catch (error) {
    await store.remove(command.workspace_id, stored.integration.id);
    if (error instanceof AppError) throw error;
    throw new AppError(
      502,
      { error: platformTexts.inboundRegistrationFailed(command.channel) },
      { cause: error },
    );
  }
  return stored.integration;
}

/** The integration a send uses: the one named (existing and connected) or the channel's latest connected. */
export async function resolveIntegration(
  store: IntegrationStore,
  command: CommandPayload<'cmd.connector.resolve-integration'>,
): Promise<CommandResult<'cmd.connector.resolve-integration'>> {
  if (command.integration_id) {
    const stored = await store.get(command.workspace_id, command.integration_id);
    if (!stored || stored.integration.channel !== command.channel) {
      throw AppError.notFound(platformTexts.integrationNotFound);
    }
    if (stored.integration.status !== 'connected')
      throw AppError.badRequest(errorTexts.integrationNotConnected);
    return stored.integration;
  }
  const latest = await store.latestConnected(command.workspace_id, command.channel);
  if (!latest) throw AppError.notFound(platformTexts.noConnectedIntegration(command.channel));
  return latest.integration;
}

export async function updateIntegration(
  store: IntegrationStore,
  command: CommandPayload<'cmd.connector.update-integration'>,
): Promise<CommandResult<'cmd.connector.update-integration'>> {
  const stored = await store.setStatus(command.workspace_id, command.integration_id, command.status);
  if (!stored) throw AppError.notFound(platformTexts.integrationNotFound);
  return stored.integration;
}
