import type { Logger } from '@inbox/service-kit';
import { Redis } from 'ioredis';

/**
 * The gateway's Redis client, set to fail fast: while Redis is away or stalls, the rate limiter must
 * decide in memory at once rather than queue requests behind Redis commands.
 */
export function connectRedis(url: string, logger: Logger): Redis {
  const redis = new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 2_000,
    // A Redis that accepts connections but does not answer would otherwise hold every request.
    commandTimeout: 500,
    // No auto-pipelining: it keeps each turn's pipeline in a Map that lives as long as the client, which
    // kept every request waiting on a pipeline alive through V8's young collections (libs/bus/src/slots.ts),
    // for about a tenth of the door's 400 (bench/RESULTS.md, twenty-third session). The rate limiter
    // writes a turn's commands together itself (WorkspaceRateLimiter.countGathered).
    enableAutoPipelining: false,
  });
  let lastError = 0;
  redis.on('error', (error) => {
    if (Date.now() - lastError < 30_000) return;
    lastError = Date.now();
    logger.warn({ err: error }, 'redis connection error');
  });
  return redis;
}
