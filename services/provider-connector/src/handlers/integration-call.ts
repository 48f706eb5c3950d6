import type { OutboundGuard } from '@inbox/outbound-http';
import type { Logger } from '@inbox/service-kit';
import type { ProviderCall } from '../adapters/channel-adapter.js';
import type { IntegrationStore } from '../store/integrations.js';
import { oauthTokens } from '../store/oauth-tokens.js';

/** What a provider call made for an integration needs of the connector. */
export interface IntegrationCallDeps {
  guard: OutboundGuard;
  logger: Logger;
  store: IntegrationStore;
  providerTimeoutMs: number;
}

/**
 * A provider call for one integration, outside a send: through the connector's guard, in its workspace's
 * turn, with its OAuth tokens, bound by `signal` (one provider timeout when unsaid).
 */
export function integrationCall(
  deps: IntegrationCallDeps,
  workspaceId: string,
  integrationId: string,
  signal: AbortSignal = AbortSignal.timeout(deps.providerTimeoutMs),
): ProviderCall {
  return {
    guard: deps.guard,
    workspaceId,
    logger: deps.logger,
    signal,
    oauth: oauthTokens(deps.store, workspaceId, integrationId, deps.providerTimeoutMs),
  };
}
