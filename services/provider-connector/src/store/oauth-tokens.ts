import { Deadline } from '@inbox/outbound-http';
import {
  type OAuthTokens,
  ProviderError,
  type RefreshGrant,
  type TokenGrant,
} from '../adapters/channel-adapter.js';
import type { IntegrationStore } from './integrations.js';

/** Refreshed this long before the provider's expiry, so a call made just before it still carries a live token. */
export const REFRESH_MARGIN_MS = 5 * 60_000;

/** Kept in the sealed config beside the tokens: when the stored access token stops working. */
const EXPIRES_AT = 'access_token_expires_at';

/** A failure that ended its call before anything was sent. */
const nothingSent = (message: string, cause?: unknown) =>
  new ProviderError(message, undefined, undefined, { cause, unsent: true });

/** The error of a token refresh, marked as ending its call before anything was sent; its refusal kept. */
function unsent(error: unknown): ProviderError {
  if (error instanceof ProviderError)
    return new ProviderError(error.message, error.status, error.providerCode, {
      cause: error,
      refusal: error.refusal,
      unsent: true,
    });
  return nothingSent(error instanceof Error ? error.message : String(error), error);
}

/** How often a call that found another replica refreshing looks for the pair it stored. */
const WAIT_STEP_MS = 100;

/**
 * A refresh under way in this process, and the calls waiting for it. Each call waits until its own
 * deadline; the refresh itself is bound by the provider timeout alone, so a pair the provider issued is
 * stored even when every call that wanted it has gone. Only waiting for another replica's refresh stops
 * once no call is left (`unwanted`).
 */
interface SharedRefresh {
  token: Promise<string>;
  waiting: number;
  unwanted: AbortController;
  /** This process holds the claim: its own token call is under way, and ends with a stored pair. */
  owner: { claimed: boolean };
}

/** The refreshes under way in this process, by store (a replica) and integration: one at a time each. */
const underWay = new WeakMap<object, Map<string, SharedRefresh>>();

/**
 * An integration's OAuth tokens, kept in its sealed config (`access_token`, `refresh_token`) with their
 * expiry. A refresh claims the config first (`claimConfig`) and looks at what is stored now, so two
 * replicas that both find the token stale refresh once: the second waits for the claim to end and takes
 * the first's new pair instead of spending the (single-use) refresh token again. No database connection
 * is held while the provider (a host the tenant configured) answers; the claim lasts the provider call's
 * bound (`providerTimeoutMs`) and a margin, so a replica that died during one leaves it to the next.
 * Calls of one process share its refresh.
 */
export function oauthTokens(
  store: Pick<IntegrationStore, 'claimConfig' | 'settleClaim' | 'get'>,
  workspaceId: string,
  integrationId: string,
  providerTimeoutMs: number,
  { signal, now = Date.now }: { signal?: AbortSignal; now?: () => number } = {},
): OAuthTokens {
  const claimMs = providerTimeoutMs + 5_000;
  const stale = (config: Record<string, string>) => {
    const expiresAt = Date.parse(config[EXPIRES_AT] ?? '');
    // Unknown expiry (a token pasted when the integration was created): used until the provider refuses it.
    return Number.isFinite(expiresAt) && expiresAt - REFRESH_MARGIN_MS <= now();
  };
  const gone = () => new Error(`integration ${integrationId} is gone`);
  // The call's deadline passed while it waited for a token (another replica's refresh, or this process's
  // begun for another call): nothing was sent, and the caller is told so in time, not after the claim.
  const pastDeadline = () =>
    nothingSent(`integration ${integrationId}: the call's deadline passed while its token was refreshed`);

  async function refreshed(config: Record<string, string>, refresh: RefreshGrant, claim: string) {
    let grant: TokenGrant;
    // Within the claim (taken for the provider timeout and a margin), whichever call's deadline passes.
    const bound = new Deadline(providerTimeoutMs);
    try {
      grant = await refresh(config.refresh_token ?? '', bound.signal);
    } catch (error) {
      // The token endpoint failed (or timed out) before the call the token is for: nothing of that call
      // was sent.
      throw unsent(error);
    } finally {
      bound.clear();
    }
    const renewed = {
      ...config,
      access_token: grant.accessToken,
      refresh_token: grant.refreshToken,
      [EXPIRES_AT]: new Date(now() + grant.expiresIn * 1000).toISOString(),
    };
    await store.settleClaim(workspaceId, integrationId, claim, renewed);
    return grant.accessToken;
  }

  async function refreshUnless(
    keep: (config: Record<string, string>) => boolean,
    refresh: RefreshGrant,
    unwanted: AbortSignal,
    owner: { claimed: boolean },
  ) {
    // A claim left by a replica that died runs out within claimMs of when it was taken.
    const giveUpAt = Date.now() + claimMs + 2 * WAIT_STEP_MS;
    for (;;) {
      // Every call that wanted the pair has gone: no claim is taken, and no token spent, for nobody.
      if (unwanted.aborted) throw pastDeadline();
      const claimed = await store.claimConfig(workspaceId, integrationId, claimMs);
      if (claimed !== 'taken') {
        owner.claimed = true;
        const { claim, config } = claimed;
        try {
          if (keep(config)) {
            await store.settleClaim(workspaceId, integrationId, claim);
            return config.access_token ?? '';
          }
          return await refreshed(config, refresh, claim);
        } catch (error) {
          await store.settleClaim(workspaceId, integrationId, claim).catch(() => undefined);
          throw error;
        }
      }
      // Another replica is refreshing (or the integration is gone): its pair, once stored, is the one to use.
      const stored = await store.get(workspaceId, integrationId);
      if (!stored) throw gone();
      if (keep(stored.config)) return stored.config.access_token ?? '';
      if (unwanted.aborted) throw pastDeadline();
      // Nothing was sent: the provider's failure, as any other before the call.
      if (Date.now() > giveUpAt)
        throw nothingSent(`integration ${integrationId}: another replica's token refresh never ended`);
      await new Promise((resolve) => setTimeout(resolve, WAIT_STEP_MS));
    }
  }

  function oneAtATime(
    refreshing: (unwanted: AbortSignal, owner: { claimed: boolean }) => Promise<string>,
  ): Promise<string> {
    // Past its deadline already: it starts nothing that no one would wait for.
    if (signal?.aborted) return Promise.reject(pastDeadline());
    let ours = underWay.get(store);
    if (!ours) {
      ours = new Map();
      underWay.set(store, ours);
    }
    const map = ours;
    let shared = map.get(integrationId);
    if (!shared) {
      const unwanted = new AbortController();
      const owner = { claimed: false };
      const token = refreshing(unwanted.signal, owner).finally(() => {
        if (map.get(integrationId) === entry) map.delete(integrationId);
      });
      // Its callers may all have left at their deadlines: the outcome is then nobody's to handle.
      token.catch(() => undefined);
      const entry: SharedRefresh = { token, waiting: 0, unwanted, owner };
      map.set(integrationId, entry);
      shared = entry;
    }
    return withinDeadline(shared, map);
  }

  /** The process's refresh, waited for no longer than this call may take. */
  function withinDeadline(shared: SharedRefresh, map: Map<string, SharedRefresh>): Promise<string> {
    if (signal?.aborted) return Promise.reject(pastDeadline());
    shared.waiting++;
    if (!signal) return shared.token;
    return new Promise((resolve, reject) => {
      const leave = () => {
        reject(pastDeadline());
        if (--shared.waiting > 0) return;
        shared.unwanted.abort();
        // A call that comes after this starts afresh, rather than joining a wait about to give up; but
        // joins this process's own token call, which stores its pair whoever waits for it.
        if (!shared.owner.claimed && map.get(integrationId) === shared) map.delete(integrationId);
      };
      signal.addEventListener('abort', leave, { once: true });
      shared.token.then(resolve, reject).finally(() => signal.removeEventListener('abort', leave));
    });
  }

  return {
    async current(refresh) {
      // The common case reads without a claim: only a stale token needs the turn-taking.
      const stored = await store.get(workspaceId, integrationId);
      if (stored && !stale(stored.config) && stored.config.access_token) return stored.config.access_token;
      return oneAtATime((unwanted, owner) =>
        refreshUnless((config) => !stale(config), refresh, unwanted, owner),
      );
    },
    async renew(rejected, refresh) {
      // Another replica already replaced the refused token: take its new one.
      return oneAtATime((unwanted, owner) =>
        refreshUnless(
          (config) => config.access_token !== rejected && !stale(config),
          refresh,
          unwanted,
          owner,
        ),
      );
    },
  };
}
