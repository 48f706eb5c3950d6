import { fileURLToPath } from 'node:url';
import type { ServiceDefinition, TrustProxy } from '@inbox/service-kit';
import { KeyCache } from './domain/key-cache.js';
import { KeyResolver } from './handlers/authenticate.js';
import { docsPage } from './handlers/docs-page.js';
import type { IdempotencyOptions } from './handlers/idempotency.js';
import { panelPage } from './handlers/panel-page.js';
import { routeTable } from './handlers/route-table.js';
import {
  AuthFailureLimiter,
  type AuthFailureLimits,
  defaultAuthFailureLimits,
} from './rate-limit/auth-failure-limiter.js';
import { connectRedis } from './rate-limit/redis-client.js';
import { WorkspaceRateLimiter } from './rate-limit/workspace-rate-limiter.js';
import { IdempotencyStore } from './store/idempotency.js';
import { WorkspaceStore } from './store/workspaces.js';

const hour = 3_600_000;

export interface GatewayOptions {
  adminToken: string;
  rateLimitPerMinute?: number;
  /** Shared rate-limit budget across replicas; without it each process counts alone (all-in-one). */
  redisUrl?: string;
  /** How long a resolved API key is trusted before it is looked up again. */
  keyCacheTtlMs?: number;
  /** Failed authentications allowed per client address before it gets 429 for a while. */
  authFailureLimits?: AuthFailureLimits;
  /** Which peers may name the client in X-Forwarded-For (service-kit's `defaultTrustedProxies` if unset). */
  trustProxy?: TrustProxy;
  /** How Idempotency-Key waiters behave (wait time, how many may wait at once). */
  idempotency?: Omit<IdempotencyOptions, 'store' | 'logger'>;
}

export function gatewayService(options: GatewayOptions): ServiceDefinition {
  return {
    name: 'gateway',
    schema: 'gateway',
    migrationsDir: fileURLToPath(new URL('../migrations', import.meta.url)),
    create: ({ pool, bus, logger }) => {
      const store = new WorkspaceStore(pool);
      const cache = new KeyCache({ ttlMs: options.keyCacheTtlMs ?? 5_000 });
      const idempotencyStore = new IdempotencyStore(pool);
      const redis = options.redisUrl ? connectRedis(options.redisUrl, logger) : undefined;
      const limiter = new WorkspaceRateLimiter(options.rateLimitPerMinute ?? 60, logger, redis);
      const authFailures = new AuthFailureLimiter(
        options.authFailureLimits ?? defaultAuthFailureLimits,
        logger,
      );
      let sweeper: NodeJS.Timeout | undefined;
      return {
        parseJson: false,
        // Refusals at the door are counted and logged, not traced (the route table admits the rest).
        traceFrom: 'admission',
        trustProxy: options.trustProxy,
        start: async () => {
          await bus.onNotice('notice.gateway.workspace-changed', ({ workspace_id }) =>
            cache.dropWorkspace(workspace_id),
          );
          sweeper = setInterval(() => {
            idempotencyStore
              .deleteExpired()
              .catch((error: unknown) => logger.warn({ err: error }, 'idempotency sweep failed'));
          }, hour);
          sweeper.unref();
        },
        stop: async () => {
          clearInterval(sweeper);
          await redis?.quit().catch(() => redis.disconnect());
        },
        routes: (app) => {
          app.use(
            routeTable({
              keys: new KeyResolver(store, cache),
              store,
              bus,
              adminToken: options.adminToken,
              authFailures,
              limiter,
              idempotency: { ...options.idempotency, store: idempotencyStore },
              logger,
              workspaceChanged: async (workspaceId) => {
                cache.dropWorkspace(workspaceId);
                await bus.notify('notice.gateway.workspace-changed', { workspace_id: workspaceId });
              },
            }),
          );
          app.use(docsPage(logger));
          app.use(panelPage(logger));
        },
      };
    },
  };
}

export { WorkspaceStore };
