import type { OAuthTokens, TokenGrant } from '../adapters/channel-adapter.js';
import type { IntegrationStore } from './integrations.js';

/** Refreshed this long before the provider's expiry, so a call made just before it still carries a live token. */
export const REFRESH_MARGIN_MS = 5 * 60_000;

/** Kept in the sealed config beside the tokens: when the stored access token stops working. */
const EXPIRES_AT = 'access_token_expires_at';

type Refresh = (refreshToken: string) => Promise<TokenGrant>;

/**
 * An integration's OAuth tokens, kept in its sealed config (`access_token`, `refresh_token`) with their
 * expiry. Every refresh happens under the integration's row lock and first looks at what is stored now,
 * so two replicas that both find the token stale refresh once: the second takes the first's new pair
 * instead of spending the (single-use) refresh token again.
 */
export function oauthTokens(
  store: Pick<IntegrationStore, 'changeConfigLocked' | 'get'>,
  workspaceId: string,
  integrationId: string,
  now: () => number = Date.now,
): OAuthTokens {
  const stale = (config: Record<string, string>) => {
    const expiresAt = Date.parse(config[EXPIRES_AT] ?? '');
    // Unknown expiry (a token pasted when the integration was created): used until the provider refuses it.
    return Number.isFinite(expiresAt) && expiresAt - REFRESH_MARGIN_MS <= now();
  };

  async function refreshUnless(keep: (config: Record<string, string>) => boolean, refresh: Refresh) {
    const token = await store.changeConfigLocked(workspaceId, integrationId, async (config) => {
      if (keep(config)) return { result: config.access_token ?? '' };
      const grant = await refresh(config.refresh_token ?? '');
      return {
        config: {
          ...config,
          access_token: grant.accessToken,
          refresh_token: grant.refreshToken,
          [EXPIRES_AT]: new Date(now() + grant.expiresIn * 1000).toISOString(),
        },
        result: grant.accessToken,
      };
    });
    if (token === undefined) throw new Error(`integration ${integrationId} is gone`);
    return token;
  }

  return {
    async current(refresh) {
      // The common case reads without the lock: only a stale token needs the turn-taking.
      const stored = await store.get(workspaceId, integrationId);
      if (stored && !stale(stored.config) && stored.config.access_token) return stored.config.access_token;
      return refreshUnless((config) => !stale(config), refresh);
    },
    async renew(rejected, refresh) {
      // Another replica already replaced the refused token: take its new one.
      return refreshUnless((config) => config.access_token !== rejected && !stale(config), refresh);
    },
  };
}
