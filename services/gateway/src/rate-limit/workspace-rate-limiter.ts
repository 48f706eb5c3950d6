import type { Logger } from '@inbox/service-kit';
import { meter } from '@inbox/telemetry';
import type { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';

export interface LimitDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until the window resets. */
  resetSeconds: number;
}

const refusals = meter('gateway').createCounter('gateway.rate_limit.refusals', {
  description: 'Requests refused with 429 by the per-workspace rate limit',
});
const fallbacks = meter('gateway').createCounter('gateway.rate_limit.fallback_decisions', {
  description: 'Rate-limit decisions taken by the per-process fallback limiter because Redis was unreachable',
});

/**
 * RATE_LIMIT_PER_MINUTE requests per workspace per minute. With Redis every gateway replica shares one
 * budget; when Redis is unreachable each replica falls back to its own in-memory limiter (logged and
 * counted) rather than failing requests. Without Redis (all-in-one mode) the limiter is in memory.
 */
export class WorkspaceRateLimiter {
  private readonly limiter: RateLimiterRedis | RateLimiterMemory;
  private lastFallbackLog = 0;

  constructor(
    private readonly perMinute: number,
    private readonly logger: Logger,
    private readonly redis?: Redis,
  ) {
    const options = { points: perMinute, duration: 60, keyPrefix: 'inbox:rl' };
    this.limiter = redis
      ? new RateLimiterRedis({
          ...options,
          storeClient: redis,
          rejectIfRedisNotReady: true,
          insuranceLimiter: new RateLimiterMemory(options),
        })
      : new RateLimiterMemory(options);
  }

  async take(workspaceId: string): Promise<LimitDecision> {
    if (this.redis && this.redis.status !== 'ready') this.noteFallback();
    try {
      const result = await this.limiter.consume(workspaceId);
      return this.decision(true, result);
    } catch (rejection) {
      if (rejection instanceof RateLimiterRes) {
        refusals.add(1);
        return this.decision(false, rejection);
      }
      throw rejection;
    }
  }

  private decision(allowed: boolean, result: RateLimiterRes): LimitDecision {
    return {
      allowed,
      limit: this.perMinute,
      remaining: Math.max(0, result.remainingPoints),
      resetSeconds: Math.max(1, Math.ceil(result.msBeforeNext / 1000)),
    };
  }

  private noteFallback(): void {
    fallbacks.add(1);
    if (Date.now() - this.lastFallbackLog > 30_000) {
      this.lastFallbackLog = Date.now();
      this.logger.warn(
        { redis_status: this.redis?.status },
        'redis unreachable: rate limiting with the per-process fallback limiter',
      );
    }
  }
}
