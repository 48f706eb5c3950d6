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
 * After Redis failed or did not answer in time (its client's command timeout), decisions stay in this
 * process for a few seconds: a hung Redis then costs one timeout per few seconds, not one per request.
 */
const redisPauseMs = 5_000;

/**
 * RATE_LIMIT_PER_MINUTE requests per workspace per minute. With Redis every gateway replica shares one
 * budget; when Redis is unreachable, failing or too slow each replica falls back to its own in-memory
 * limiter (logged and counted) rather than failing or stalling requests. Without Redis (all-in-one
 * mode) the limiter is in memory.
 */
export class WorkspaceRateLimiter {
  private readonly local: RateLimiterMemory;
  private readonly shared?: RateLimiterRedis;
  private redisPausedUntil = 0;
  private lastFallbackLog = 0;

  constructor(
    private readonly perMinute: number,
    private readonly logger: Logger,
    private readonly redis?: Redis,
  ) {
    const options = { points: perMinute, duration: 60, keyPrefix: 'inbox:rl' };
    this.local = new RateLimiterMemory(options);
    this.shared = redis
      ? new RateLimiterRedis({
          ...options,
          storeClient: redis,
          rejectIfRedisNotReady: true,
          // A workspace over its budget stays refused until its window ends, which this replica then
          // knows: its further requests are answered here, without a Redis round trip each (a flood of
          // refused requests costs Redis nothing and the door little).
          inMemoryBlockOnConsumed: perMinute + 1,
        })
      : undefined;
  }

  async take(workspaceId: string): Promise<LimitDecision> {
    try {
      return this.decision(true, await this.consume(workspaceId));
    } catch (rejection) {
      if (rejection instanceof RateLimiterRes) {
        refusals.add(1);
        return this.decision(false, rejection);
      }
      throw rejection;
    }
  }

  /** Resolves within budget, rejects with a RateLimiterRes over it. */
  private async consume(workspaceId: string): Promise<RateLimiterRes> {
    if (!this.shared) return this.local.consume(workspaceId);
    if (this.redis?.status === 'ready' && Date.now() >= this.redisPausedUntil) {
      try {
        return await this.shared.consume(workspaceId);
      } catch (error) {
        // A refusal is an answer; anything else means Redis could not give one.
        if (error instanceof RateLimiterRes) throw error;
        this.redisPausedUntil = Date.now() + redisPauseMs;
        this.noteFallback(error);
      }
    } else {
      this.noteFallback();
    }
    return this.local.consume(workspaceId);
  }

  private decision(allowed: boolean, result: RateLimiterRes): LimitDecision {
    return {
      allowed,
      limit: this.perMinute,
      remaining: Math.max(0, result.remainingPoints),
      resetSeconds: Math.max(1, Math.ceil(result.msBeforeNext / 1000)),
    };
  }

  private noteFallback(error?: unknown): void {
    fallbacks.add(1);
    if (Date.now() - this.lastFallbackLog < 30_000) return;
    this.lastFallbackLog = Date.now();
    this.logger.warn(
      { err: error, redis_status: this.redis?.status },
      'redis unreachable or slow: rate limiting with the per-process fallback limiter',
    );
  }
}
