import { randomBytes, randomUUID } from 'node:crypto';
import {
  AppError,
  type CommandPayload,
  type CommandResult,
  descriptorOf,
  errorTexts,
  integrationsPerWorkspace,
  platformTexts,
  type StoredConfig,
} from '@inbox/contracts';
import { checkUrl, type OutboundGuard } from '@inbox/outbound-http';
import type { Logger } from '@inbox/service-kit';
import type { CallbackUrlRules } from '../adapters/channel-adapter.js';
import { adapterFor, ProviderError } from '../adapters/index.js';
import {
  AccountAlreadyConnected,
  type IntegrationStore,
  type StoredIntegration,
} from '../store/integrations.js';
import { callbackUrlOf } from './inbound.js';
import { integrationCall } from './integration-call.js';

export interface CreateIntegrationDeps {
  store: IntegrationStore;
  guard: OutboundGuard;
  logger: Logger;
  publicConnectorUrl: string;
  providerTimeoutMs: number;
  afterCreate?: (created: StoredIntegration, workspaceId: string) => Promise<unknown>;
}

/**
 * A base_url must lead to an address the connector may call: a tenant must not point the connector (and
 * the credentials it sends) at the platform's own network or the cloud metadata endpoint.
 */
async function requireAllowedBaseUrl(
  deps: CreateIntegrationDeps,
  baseUrl: string | undefined,
  workspaceId: string,
) {
  if (baseUrl === undefined) return;
  const refusal = await checkUrl(baseUrl, deps.guard.policy, workspaceId);
  if (!refusal) return;
  deps.logger.warn(
    { host: refusal.host, address: refusal.address ?? null },
    'integration refused: base_url leads to a forbidden address',
  );
  throw AppError.badRequest(platformTexts.baseUrlRefused(refusal.text));
}

/**
 * Stores the integration (credentials sealed) and registers its inbound URL with the provider; an
 * integration the provider refused to register is removed again, so "connected" means reachable.
 */
export async function createIntegration(
  deps: CreateIntegrationDeps,
  command: CommandPayload<'cmd.connector.create-integration'>,
): Promise<CommandResult<'cmd.connector.create-integration'>> {
  const { store } = deps;
  if (!adapterFor(command.channel))
    throw AppError.badRequest(platformTexts.channelNotSupported(command.channel));
  const descriptor = descriptorOf(command.channel);
  const config = descriptor.config.safeParse(command.config);
  if (!config.success)
    throw AppError.badRequest(config.error.issues[0]?.message ?? platformTexts.configInvalid);
  const checked: StoredConfig = descriptor.callbackSecret
    ? { ...config.data, callback_secret: randomBytes(32).toString('base64url') }
    : config.data;
  await requireAllowedBaseUrl(deps, checked.base_url, command.workspace_id);
  // The id is chosen here because some channels' account id is the integration's own.
  const id = randomUUID();
  // Refused before the provider is called: registering would take the account's callback from the
  // integration that has it.
  const stored = await refusingAccountConnected(() =>
    store.create(command.workspace_id, {
      id,
      channel: command.channel,
      name: command.name,
      config: checked,
      accountId: descriptor.accountId(config.data, id),
    }),
  );
  if (!stored) throw AppError.badRequest(platformTexts.integrationLimitReached(integrationsPerWorkspace));
  const { registration, problems } = await registerCallback(deps, command.workspace_id, stored, () =>
    store.remove(command.workspace_id, stored.integration.id),
  );
  // In the background: the answer does not wait for it, and a failure is retried by the refresher.
  void deps.afterCreate?.(stored, command.workspace_id);
  const warnings = [
    ...(problems.length > 0 ? [platformTexts.callbackUrlWarning(command.channel, problems)] : []),
    // The provider has no API for its callback URL: the answer says what to set in its console.
    ...(registration
      ? [
          platformTexts.callbackUrlManual(
            command.channel,
            registration.manual.url,
            registration.manual.topics,
          ),
        ]
      : []),
  ];
  return warnings.length > 0 ? { ...stored.integration, warnings } : stored.integration;
}

/**
 * Registers the integration's inbound URL with its provider, so that "connected" means reachable. A
 * refusal undoes what made it connected (`undo`) and is answered: credentials the provider refuses, or an
 * account it does not know, are the caller's 400; a callback URL it will not take names the rules the URL
 * breaks.
 */
async function registerCallback(
  deps: CreateIntegrationDeps,
  workspaceId: string,
  stored: StoredIntegration,
  undo: (error: unknown) => Promise<unknown>,
) {
  const { store, logger, publicConnectorUrl } = deps;
  const { channel, id } = stored.integration;
  const adapter = adapterFor(channel);
  if (!adapter) throw AppError.badRequest(platformTexts.channelNotSupported(channel));
  const callbackUrl = callbackUrlOf(channel, id, publicConnectorUrl);
  const problems = callbackUrlProblems(callbackUrl, adapter.callbackUrlRules);
  let registration: Awaited<ReturnType<typeof adapter.registerInbound>>;
  const startedAt = adapter.oneCallbackPerAccount ? await store.registrationClock() : undefined;
  try {
    registration = await adapter.registerInbound(
      stored.config,
      callbackUrl,
      integrationCall(deps, workspaceId, id),
    );
  } catch (error) {
    const refused = error instanceof ProviderError && error.refusal === 'callback_refused';
    if (refused && startedAt !== undefined && adapter.refusedRegistrationDropsCallback)
      await accountCallbackDropped(deps, workspaceId, id, startedAt);
    await undo(error);
    if (error instanceof AppError) throw error;
    // A mistyped account, key or token: the caller's config is wrong, and the answer says so.
    if (error instanceof ProviderError && error.refusal === 'credentials_rejected') {
      throw new AppError(
        400,
        { error: platformTexts.inboundRegistrationCredentialsRejected(channel) },
        { cause: error },
      );
    }
    // The provider would not take the callback URL: say which of its rules the URL breaks.
    throw new AppError(
      502,
      {
        error:
          refused && problems.length > 0
            ? platformTexts.inboundRegistrationRefused(channel, problems)
            : platformTexts.inboundRegistrationFailed(channel),
      },
      { cause: error },
    );
  }
  if (startedAt !== undefined) await takeAccountCallbacks(deps, workspaceId, id, startedAt);
  if (problems.length > 0) {
    logger.warn(
      { integration_id: id, channel, callback_url: callbackUrl },
      'callback URL accepted by the provider, but the real provider of the channel would refuse it',
    );
  }
  return { registration, problems };
}

/**
 * The provider now calls this integration for its account and no other: another integration of the
 * account, in any workspace, says so (disconnected, `callback_taken`) rather than stay connected and deaf.
 */
async function takeAccountCallbacks(
  deps: CreateIntegrationDeps,
  workspaceId: string,
  id: string,
  startedAt: string,
) {
  const taken = await deps.store.callbackRegistered(workspaceId, id, startedAt);
  if (taken.length === 0) return;
  deps.logger.warn(
    { integration_id: id, taken_from: taken.map((other) => other.id) },
    "registering this integration's callback URL took the account's callbacks from other integrations of it",
  );
}

/**
 * The provider dropped the account's callback URL as it refused this integration's: the others of the
 * account it called say so too (disconnected, `callback_taken`), until one is connected again.
 */
async function accountCallbackDropped(
  deps: CreateIntegrationDeps,
  workspaceId: string,
  id: string,
  startedAt: string,
) {
  const deaf = await deps.store.callbackDropped(workspaceId, id, startedAt);
  if (deaf.length === 0) return;
  deps.logger.warn(
    { integration_id: id, no_longer_called: deaf.map((other) => other.id) },
    "the provider refused this integration's callback URL after dropping the account's: other integrations of it are no longer called",
  );
}

/** What in a callback URL the channel's provider would refuse; empty when it takes it. */
function callbackUrlProblems(url: string, rules: CallbackUrlRules | undefined): string[] {
  if (!rules) return [];
  const problems: string[] = [];
  const parsed = new URL(url);
  if (rules.httpsOnly && parsed.protocol !== 'https:') problems.push(platformTexts.callbackUrlNotHttps(url));
  if (rules.maxLength !== undefined && url.length > rules.maxLength) {
    problems.push(platformTexts.callbackUrlTooLong(url.length, rules.maxLength));
  }
  const port = Number(parsed.port || (parsed.protocol === 'https:' ? 443 : 80));
  if (rules.ports && !rules.ports.includes(port))
    problems.push(platformTexts.callbackUrlPort(port, rules.ports));
  return problems;
}

/** The integration a send uses: the one named (existing and connected) or the channel's latest connected. */
export async function resolveIntegration(
  store: IntegrationStore,
  command: CommandPayload<'cmd.connector.resolve-integration'>,
): Promise<CommandResult<'cmd.connector.resolve-integration'>> {
  if (command.integration_id) {
    const stored = await store.forSend(command.workspace_id, command.integration_id);
    if (!stored || stored.integration.channel !== command.channel) {
      throw AppError.notFound(platformTexts.integrationNotFound);
    }
    if (stored.integration.status !== 'connected')
      throw AppError.badRequest(errorTexts.integrationNotConnected);
    return stored.integration;
  }
  const latest = await store.latestConnectedForSend(command.workspace_id, command.channel);
  if (!latest) throw AppError.notFound(platformTexts.noConnectedIntegration(command.channel));
  return latest.integration;
}

export async function getIntegration(
  store: IntegrationStore,
  command: CommandPayload<'cmd.connector.get-integration'>,
): Promise<CommandResult<'cmd.connector.get-integration'>> {
  const stored = await store.get(command.workspace_id, command.integration_id);
  if (!stored) throw AppError.notFound(platformTexts.integrationNotFound);
  return stored.integration;
}

export async function listIntegrations(
  store: IntegrationStore,
  command: CommandPayload<'cmd.connector.list-integrations'>,
): Promise<CommandResult<'cmd.connector.list-integrations'>> {
  return { integrations: await store.list(command.workspace_id) };
}

export async function updateIntegration(
  deps: CreateIntegrationDeps,
  command: CommandPayload<'cmd.connector.update-integration'>,
): Promise<CommandResult<'cmd.connector.update-integration'>> {
  const { store } = deps;
  const { workspace_id: workspaceId, integration_id: id, status } = command;
  const stored = await refusingAccountConnected(() => store.setStatus(workspaceId, id, status));
  if (!stored) throw AppError.notFound(platformTexts.integrationNotFound);
  // Connected again: its callback is registered again, since while it was disconnected the provider may
  // have been pointed elsewhere (another integration of the account, since removed or disconnected), or
  // its credentials refused. A refusal leaves it disconnected, as the provider's verdict.
  if (status === 'connected' && !stored.wasConnected) {
    await registerCallback(deps, workspaceId, stored, async (error) => {
      if (error instanceof ProviderError && error.refusal === 'credentials_rejected')
        await store.markCredentialsRejected(workspaceId, id);
      else await store.setStatus(workspaceId, id, 'disconnected');
    });
  }
  return stored.integration;
}

/** A workspace connects a provider account once: a second connection is the 409 naming the first. */
async function refusingAccountConnected<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (!(error instanceof AccountAlreadyConnected)) throw error;
    throw new AppError(409, {
      error: platformTexts.integrationAccountConnected(error.channel, error.integrationId),
    });
  }
}
