import { integrationChannels } from '@inbox/contracts';
import type { Pool } from '@inbox/db';
import { meter } from '@inbox/telemetry';
import { adapterFor, type StoredConfigAdapter } from '../adapters/index.js';
import { IntegrationSweep } from '../integration-sweep.js';
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
/**
 * A read back lasts at most this many provider timeouts, and never less than a minute: forty pages at
 * Meta's two calls a second wait twenty seconds between them, which a read cut shorter, at the same page
 * at every check, would never get past.
 */
const readBackInTimeouts = 10;
const readBackAtLeastMs = 60_000;

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
      workOn: (stored, workspaceId, stopping) =>
        checkSubscription(deps, options, { ...stored, workspaceId }, stopping),
    },
    { everyMs: options.everyMs, workers: options.workers },
  );
}

/**
 * One check of an integration: registers it again when its provider stopped calling it, and reads back
 * what the provider posted nowhere meanwhile (or what an earlier read left unread).
 */
async function checkSubscription(
  deps: CallbackSubscriptionDeps,
  options: CallbackSubscriptionOptions,
  stored: CallbackIntegration,
  stopping: AbortSignal,
): Promise<void> {
  const { integration, config, workspaceId } = stored;
  const adapter = adapterFor(integration.channel);
  if (!adapter?.callbackSubscribed || integration.status !== 'connected') return;
  const checks = new SubscriptionChecks(deps.pool, integration.id);
  const call = integrationCall(
    deps,
    workspaceId,
    integration.id,
    AbortSignal.any([stopping, AbortSignal.timeout(deps.providerTimeoutMs)]),
  );
  const checkedAt = new Date();
  const known = await checks.read();
  let since = known.readBackSince;
  if (await adapter.callbackSubscribed(config, call)) {
    // Subscribed, and nothing left to read back: all it posted until now reached us, or was refused and
    // delivered again.
    if (!since) return checks.confirm(checkedAt);
  } else {
    const callbackUrl = callbackUrlOf(integration.channel, integration.id, deps.publicConnectorUrl);
    await adapter.registerInbound(config, callbackUrl, call);
    resubscribed.add(1, { channel: integration.channel });
    deps.logger.warn(
      { integration_id: integration.id, workspace_id: workspaceId, channel: integration.channel },
      'integration registered again: its provider had stopped calling it',
    );
    // From an hour before the last check that found it subscribed (Meta gave up on what came from then
    // on), or before it was connected when no check found it so; an earlier read left unfinished too.
    const confirmed = known.confirmedAt ?? new Date(integration.connected_at ?? Date.now());
    const from = new Date(Math.max(confirmed.getTime() - givenUpAfterMs, Date.now() - readBackAtMostMs));
    since = since && since < from ? since : from;
    // Noted before it is read: a read cut short is taken up at the next check.
    if (adapter.messagesSince) await checks.readBackFrom(since);
  }
  if (!adapter.messagesSince || !since) return checks.confirm(checkedAt);
  await readBack(deps, options, stored, adapter.messagesSince, since, stopping);
  // Subscribed since the check began: what came after it arrives by webhook.
  await checks.confirm(checkedAt);
}

/** Reads the messages posted nowhere since `since` back from the provider, and keeps them to be recorded. */
async function readBack(
  deps: CallbackSubscriptionDeps,
  options: CallbackSubscriptionOptions,
  stored: CallbackIntegration,
  messagesSince: NonNullable<StoredConfigAdapter['messagesSince']>,
  since: Date,
  stopping: AbortSignal,
): Promise<void> {
  const { integration, config, workspaceId } = stored;
  const about = { integration_id: integration.id, workspace_id: workspaceId };
  const call = integrationCall(
    deps,
    workspaceId,
    integration.id,
    AbortSignal.any([
      stopping,
      AbortSignal.timeout(Math.max(deps.providerTimeoutMs * readBackInTimeouts, readBackAtLeastMs)),
    ]),
  );
  let messages = 0;
  for await (const batch of messagesSince(config, call, since)) {
    if (!(await deps.kept.keep(stored, batch, options.keptBytesPerWorkspace))) {
      // Its workspace's kept callbacks are at their bound: read again at the next check.
      throw new Error(
        'messages read back left for the next check: their workspace has too many kept callbacks',
      );
    }
    messages += batch.messages.length;
  }
  readBackMessages.add(messages, { channel: integration.channel });
  deps.logger.info(
    { ...about, since: since.toISOString(), messages },
    'messages sent while the provider did not call read back from it, kept to be recorded',
  );
}

/** The subscription check's record of one integration (migration 022). */
class SubscriptionChecks {
  constructor(
    private readonly pool: Pool,
    private readonly integrationId: string,
  ) {}

  async read(): Promise<{ confirmedAt: Date | null; readBackSince: Date | null }> {
    const { rows } = await this.pool.query<{
      subscription_confirmed_at: Date | null;
      read_back_since: Date | null;
    }>('select subscription_confirmed_at, read_back_since from integrations where id = $1', [
      this.integrationId,
    ]);
    return {
      confirmedAt: rows[0]?.subscription_confirmed_at ?? null,
      readBackSince: rows[0]?.read_back_since ?? null,
    };
  }

  /** Where a read back starts, until it finishes. */
  async readBackFrom(since: Date): Promise<void> {
    await this.pool.query('update integrations set read_back_since = $2 where id = $1', [
      this.integrationId,
      since,
    ]);
  }

  /** Subscribed at `at`, with nothing left to read back. */
  async confirm(at: Date): Promise<void> {
    await this.pool.query(
      'update integrations set subscription_confirmed_at = $2, read_back_since = null where id = $1',
      [this.integrationId, at],
    );
  }
}
