import { fileURLToPath } from 'node:url';
import type { ServiceDefinition } from '@inbox/service-kit';
import { Redis } from 'ioredis';
import { KeyCache } from './domain/key-cache.js';
import { adminRoutes } from './handlers/admin-routes.js';
import { KeyResolver } from './handlers/authenticate.js';
import { publicRoutes } from './handlers/public-routes.js';
import { WorkspaceRateLimiter } from './rate-limit/workspace-rate-limiter.js';
import { IdempotencyStore } from './store/idempotency.js';
import { WorkspaceStore } from './store/workspaces.js';

// The spec's limit is on requests; 1 MB leaves room for any legitimate body and refuses the rest early.
const bodyLimit = '1mb';
const hour = 3_600_000;

export interface GatewayOptions {
  adminToken: string;
  rateLimitPerMinute?: number;
  /** Shared rate-limit budget across replicas; without it each process counts alone (all-in-one). */
  redisUrl?: string;
  /** How long a resolved API key is trusted before it is looked up again. */
  keyCacheTtlMs?: number;
}

export function gatewayService(options: GatewayOptions): ServiceDefinition {
  return {
    name: 'gateway',
    schema: 'gateway',
    migrationsDir: fileURLToPath(new URL('../migrations', import.meta.url)),
    create: ({ pool, bus, logger }) => {
      const store = new WorkspaceStore(pool);
      const cache = new KeyCache(options.keyCacheTtlMs ?? 5_000);
      const idempotencyStore = new IdempotencyStore(pool);
      let lastRedisError = 0;
      const redis = options.redisUrl
        ? new Redis(options.redisUrl, {
            // Fail fast while Redis is away, so the fallback limiter answers instead of queued commands.
            enableOfflineQueue: false,
            maxRetriesPerRequest: 1,
            connectTimeout: 2_000,
          })
        : undefined;
      redis?.on('error', (error) => {
        if (Date.now() - lastRedisError < 30_000) return;
        lastRedisError = Date.now();
        logger.warn({ err: error }, 'redis connection error');
      });
      const limiter = new WorkspaceRateLimiter(options.rateLimitPerMinute ?? 60, logger, redis);
      let sweeper: NodeJS.Timeout | undefined;
      return {
        parseJson: false,
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
            publicRoutes({
              keys: new KeyResolver(store, cache),
              limiter,
              idempotencyStore,
              bus,
              bodyLimit,
              logger,
            }),
          );
          app.use(
            adminRoutes({
              store,
              bus,
              adminToken: options.adminToken,
              bodyLimit,
              workspaceChanged: async (workspaceId) => {
                cache.dropWorkspace(workspaceId);
                await bus.notify('notice.gateway.workspace-changed', { workspace_id: workspaceId });
              },
            }),
          );
        },
      };
    },
  };
}

export { WorkspaceStore };
