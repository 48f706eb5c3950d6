import { integrationChannels } from '@inbox/contracts';
import type { Pool } from '@inbox/db';
import { meter } from '@inbox/telemetry';
import { adapterFor } from '../adapters/index.js';
import { type ClaimedIntegration, IntegrationSweep } from '../integration-sweep.js';
import { claimDueIntegration } from '../store/integration-claims.js';
import type { CallbackIntegration } from '../store/integrations.js';
import { defaultCallbackLimits } from './callback-admission.js';
import { callbackUrlOf } from './inbound.js';
import { type IntegrationCallDeps, integrationCall } from './integration-call.js';
import type { KeptCallbacks } from './kept-callbacks.js';

export interface CallbackSubscriptionOptions {
  /** How often each integration's subscription is checked. */
  everyMs: number;
  /** Checks under way at once in this process, at most one per workspace. */
  workers: number;
  /** What one workspace's kept callbacks may weigh: the messages read back are kept within it. */
  keptBytesPerWorkspace: number;
}

export const defaultCallbackSubscriptionOptions: CallbackSubscriptionOptions = {
  // Meta posts nothing it could not deliver once it has unsubscribed the app: what comes meanwhile is read
  // back, a conversation's 20 latest messages at most, so the check comes often, and costs one GET.
  everyMs: 10 * 60_000,
  workers: 2,
  keptBytesPerWorkspace: defaultCallbackLimits.keptBytesPerWorkspace,
};

/**
 * How long before it unsubscribes an app Meta has been failing to deliver to it: "If delivery of a
 * notification fails for one hour" (Messenger Platform, webhooks). Messages sent from then on were posted
 * nowhere, and are read back once the app is subscribed again.
 */
const givenUpAfterMs = 60 * 60_000;
/** The furthest back messages are read: an integration unchecked for longer is read from then on. */
const readBackAtMostMs = 7 * 24 * 3_600_000;
/** A read back lasts at most this many provider timeouts: forty pages at Meta's two calls a second. */
const readBackInTimeouts = 10;

export interface CallbackSubscriptionDeps extends IntegrationCallDeps {
  pool: Pool;
  /** Where providers reach the connector: the callback URL a registration names. */
  publicConnectorUrl: string;
  /** Where messages read back from the provider are kept, to be recorded as callbacks are. */
  kept: KeptCallbacks;
}

const resubscribed = meter('connector').createCounter('connector.callback_resubscriptions', {
  description:
    'Integrations a provider had stopped calling of its own accord (Meta unsubscribes an app whose webhooks fail for an hour), registered again',
});
const readBackMessages = meter('connector').createCounter('connector.read_back_messages', {
  description:
    'Messages read back from a provider after it was registered again (Meta, through the Conversations API), kept to be recorded; those taken in before are taken in once',
});

/** The channels whose providers stop calling of their own accord. */
const checkedChannels = integrationChannels.filter((channel) => adapterFor(channel)?.callbackSubscribed);

/**
 * Checks, for each connected integration in turn, that its provider still calls its callbacks, and
 * registers it again when it does not: Meta unsubscribes an app whose webhooks failed for an hour (the
 * connector out of reach, say), and posts nothing more for the account until it subscribes again. The
 * messages sent meanwhile are then read back from the provider (`messagesSince`) and kept to be recorded.
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
      workOn: (stored, workspaceId, stopping, claimed) =>
        subscribeAgainIfDropped(deps, options, { ...stored, workspaceId }, stopping, claimed),
    },
    { everyMs: options.everyMs, workers: options.workers },
  );
}

async function subscribeAgainIfDropped(
  deps: CallbackSubscriptionDeps,
  options: CallbackSubscriptionOptions,
  stored: CallbackIntegration,
  stopping: AbortSignal,
  claimed: ClaimedIntegration,
): Promise<void> {
  const { integration, config, workspaceId } = stored;
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
  if (!adapter.messagesSince) return;
  // From an hour before the last check that found it subscribed (Meta gave up on what came from then
  // on), or before it was connected when never checked.
  const checked = claimed.claimed_before ?? new Date(integration.connected_at ?? Date.now());
  const since = new Date(Math.max(checked.getTime() - givenUpAfterMs, Date.now() - readBackAtMostMs));
  const readBack = integrationCall(
    deps,
    workspaceId,
    integration.id,
    AbortSignal.any([stopping, AbortSignal.timeout(deps.providerTimeoutMs * readBackInTimeouts)]),
  );
  let messages = 0;
  for await (const batch of adapter.messagesSince(config, readBack, since)) {
    if (!(await deps.kept.keep(stored, batch, options.keptBytesPerWorkspace))) {
      deps.logger.warn(
        { integration_id: integration.id, workspace_id: workspaceId },
        'messages read back from the provider left: their workspace has too many kept callbacks',
      );
      break;
    }
    messages += batch.messages.length;
  }
  readBackMessages.add(messages, { channel: integration.channel });
  deps.logger.info(
    { integration_id: integration.id, workspace_id: workspaceId, since: since.toISOString(), messages },
    'messages sent while the provider did not call read back from it, kept to be recorded',
  );
}
