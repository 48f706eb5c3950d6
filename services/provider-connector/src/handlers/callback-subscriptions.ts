import { integrationChannels } from '@inbox/contracts';
import type { Pool } from '@inbox/db';
import { meter } from '@inbox/telemetry';
import { adapterFor } from '../adapters/index.js';
import { IntegrationSweep } from '../integration-sweep.js';
import { claimDueIntegration } from '../store/integration-claims.js';
import type { StoredIntegration } from '../store/integrations.js';
import { callbackUrlOf } from './inbound.js';
import { type IntegrationCallDeps, integrationCall } from './integration-call.js';

export interface CallbackSubscriptionOptions {
  /** How often each integration's subscription is checked. */
  everyMs: number;
  /** Checks under way at once in this process, at most one per workspace. */
  workers: number;
}

export const defaultCallbackSubscriptionOptions: CallbackSubscriptionOptions = {
  // Meta keeps nothing it could not deliver once it has unsubscribed the app: what is posted meanwhile
  // is lost, so the check comes often, and costs one GET.
  everyMs: 10 * 60_000,
  workers: 2,
};

export interface CallbackSubscriptionDeps extends IntegrationCallDeps {
  pool: Pool;
  /** Where providers reach the connector: the callback URL a registration names. */
  publicConnectorUrl: string;
}

const resubscribed = meter('connector').createCounter('connector.callback_resubscriptions', {
  description:
    'Integrations a provider had stopped calling of its own accord (Meta unsubscribes an app whose webhooks fail for an hour), registered again',
});

/** The channels whose providers stop calling of their own accord. */
const checkedChannels = integrationChannels.filter((channel) => adapterFor(channel)?.callbackSubscribed);

/**
 * Checks, for each connected integration in turn, that its provider still calls its callbacks, and
 * registers it again when it does not: Meta unsubscribes an app whose webhooks failed for an hour (the
 * connector out of reach, say), and posts nothing more for the account until it subscribes again.
 */
export function callbackSubscriptionSweep(
  deps: CallbackSubscriptionDeps,
  options: CallbackSubscriptionOptions = defaultCallbackSubscriptionOptions,
): IntegrationSweep {
  return new IntegrationSweep(
    {
      what: 'callback subscription check',
      claimDue: (busyWorkspaces) =>
        claimDueIntegration(deps.pool, {
          stamp: 'subscription_checked_at',
          channels: checkedChannels,
          everyMs: options.everyMs,
          busyWorkspaces,
        }),
      integrations: deps.store,
      logger: deps.logger,
      workOn: (stored, workspaceId, stopping) => subscribeAgainIfDropped(deps, stored, workspaceId, stopping),
    },
    { everyMs: options.everyMs, workers: options.workers },
  );
}

async function subscribeAgainIfDropped(
  deps: CallbackSubscriptionDeps,
  { integration, config }: StoredIntegration,
  workspaceId: string,
  stopping: AbortSignal,
): Promise<void> {
  const adapter = adapterFor(integration.channel);
  if (!adapter?.callbackSubscribed || integration.status !== 'connected') return;
  const call = integrationCall(
    deps,
    workspaceId,
    integration.id,
    AbortSignal.any([stopping, AbortSignal.timeout(deps.providerTimeoutMs)]),
  );
  if (await adapter.callbackSubscribed(config, call)) return;
  const callbackUrl = callbackUrlOf(integration.channel, integration.id, deps.publicConnectorUrl);
  await adapter.registerInbound(config, callbackUrl, call);
  resubscribed.add(1, { channel: integration.channel });
  deps.logger.warn(
    { integration_id: integration.id, workspace_id: workspaceId, channel: integration.channel },
    'integration registered again: its provider had stopped calling it',
  );
}
