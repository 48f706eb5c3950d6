import { integrationChannels } from '@inbox/contracts';
import type { Pool } from '@inbox/db';
import type { OutboundGuard } from '@inbox/outbound-http';
import type { Logger } from '@inbox/service-kit';
import { meter } from '@inbox/telemetry';
import { adapterFor } from '../adapters/index.js';
import { IntegrationSweep } from '../integration-sweep.js';
import { claimDueIntegration } from '../store/integration-claims.js';
import type { IntegrationStore, StoredIntegration } from '../store/integrations.js';
import { MissedCallbackStore } from '../store/missed-callbacks.js';
import { defaultCallbackLimits } from './callback-admission.js';
import { integrationCall } from './integration-call.js';
import type { KeptCallbacks } from './kept-callbacks.js';

export interface MissedCallbacksOptions {
  /** How often each integration is polled: well within the time the provider lists a missed callback. */
  everyMs: number;
  /** Polls under way at once in this process, at most one per workspace. */
  workers: number;
  /** What a workspace's kept callbacks may weigh: as for those posted (CallbackLimits). */
  keptBytesPerWorkspace: number;
}

export const defaultMissedCallbacksOptions: MissedCallbacksOptions = {
  // Mercado Livre lists a notification it gave up on for two days: a poll every ten minutes takes in
  // one lost to an outage of the connector about an hour and ten minutes after it was sent.
  everyMs: 10 * 60_000,
  workers: 2,
  keptBytesPerWorkspace: defaultCallbackLimits.keptBytesPerWorkspace,
};

export interface MissedCallbacksDeps {
  pool: Pool;
  store: IntegrationStore;
  logger: Logger;
  fetching: { guard: OutboundGuard; providerTimeoutMs: number };
  kept: KeptCallbacks;
}

const recovered = meter('connector').createCounter('connector.missed_callbacks', {
  description:
    'Callbacks a provider gave up delivering (Mercado Livre missed_feeds), fetched from it and kept to be recorded',
});

/** The channels whose providers list the callbacks they gave up delivering. */
const missedChannels = integrationChannels.filter((channel) => adapterFor(channel)?.missedCallbacks);

/** Pages of missed callbacks one poll reads within its bound, at one provider timeout each. */
const pollBoundInTimeouts = 10;

/**
 * Polls the providers that keep the callbacks they gave up delivering, for each connected integration in
 * turn, and keeps each one not taken before, to be recorded as a posted one would be (KeptCallbacks). A
 * callback refused before it was read (over its integration's rate, or while the connector was down for
 * longer than the provider retries) is taken in all the same.
 */
export function missedCallbacksSweep(
  deps: MissedCallbacksDeps,
  options: MissedCallbacksOptions = defaultMissedCallbacksOptions,
): IntegrationSweep {
  const missed = new MissedCallbackStore(deps.pool);
  return new IntegrationSweep(
    {
      what: 'missed callbacks poll',
      claimDue: (busyWorkspaces) =>
        claimDueIntegration(deps.pool, {
          stamp: 'missed_polled_at',
          channels: missedChannels,
          everyMs: options.everyMs,
          busyWorkspaces,
        }),
      integrations: deps.store,
      logger: deps.logger,
      workOn: (stored, workspaceId, stopping) =>
        takeMissed(deps, missed, { ...stored, workspaceId }, stopping, options),
    },
    { everyMs: options.everyMs, workers: options.workers },
  );
}

async function takeMissed(
  deps: MissedCallbacksDeps,
  missed: MissedCallbackStore,
  stored: StoredIntegration & { workspaceId: string },
  stopping: AbortSignal,
  options: MissedCallbacksOptions,
): Promise<void> {
  const { integration, workspaceId } = stored;
  const adapter = adapterFor(integration.channel);
  if (!adapter?.missedCallbacks || integration.status !== 'connected') return;
  const bound = AbortSignal.timeout(deps.fetching.providerTimeoutMs * pollBoundInTimeouts);
  const call = integrationCall(
    { ...deps.fetching, logger: deps.logger, store: deps.store },
    workspaceId,
    integration.id,
    AbortSignal.any([stopping, bound]),
  );
  const about = { integration_id: integration.id, workspace_id: workspaceId };
  let taken = 0;
  for await (const page of adapter.missedCallbacks(stored.config, call)) {
    const fresh = await missed.notTaken(
      integration.id,
      page.map((one) => one.key),
    );
    const keys: string[] = [];
    for (const one of page) {
      // A key listed twice is taken once.
      if (!fresh.delete(one.key)) continue;
      if (!(await deps.kept.keep(stored, one.batch, options.keptBytesPerWorkspace))) {
        // Its workspace's kept callbacks are at their bound: the rest wait for the next poll.
        await missed.taken(integration.id, keys);
        recovered.add(keys.length);
        deps.logger.warn(about, 'missed callbacks left for the next poll: their workspace has too many kept');
        return;
      }
      keys.push(one.key);
    }
    // Remembered once kept: a poll cut short between the two keeps it again, and it is taken in once.
    await missed.taken(integration.id, keys);
    recovered.add(keys.length);
    taken += keys.length;
  }
  if (taken > 0) {
    deps.logger.info({ ...about, taken }, 'missed callbacks fetched from the provider, kept to be recorded');
  }
}
