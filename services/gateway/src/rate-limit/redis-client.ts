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
    // The checks of the requests read in one turn of the event loop go in one write: each write wakes
    // Redis, and costs the gateway more than the check itself.
    enableAutoPipelining: true,
  });
  let lastError = 0;
  redis.on('error', (error) => {
    if (Date.now() - lastError < 30_000) return;
    lastError = Date.now();
    logger.warn({ err: error }, 'redis connection error');
  });
  return redis;
}
