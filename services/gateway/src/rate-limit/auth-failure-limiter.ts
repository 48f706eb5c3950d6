import type { Logger } from '@inbox/service-kit';
import { meter } from '@inbox/telemetry';
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';

export interface AuthFailureLimits {
  /** Failed authentications a client may have per window before it is refused. */
  failures: number;
  windowSeconds: number;
  /** How long a client that went over is refused. */
  blockSeconds: number;
}

/**
 * A client whose key is wrong a few times keeps getting the spec's 401; a flood of wrong keys from one
 * address, which costs a database lookup each when the keys vary, is refused for a minute.
 */
export const defaultAuthFailureLimits: AuthFailureLimits = {
  failures: 30,
  windowSeconds: 10,
  blockSeconds: 60,
};

const refusals = meter('gateway').createCounter('gateway.auth_failures.refusals', {
  description: 'Requests refused with 429 because their client address failed authentication too often',
});

/**
 * Failed authentications (API key or admin token) per client address, counted in this process's memory.
 * Not in Redis on purpose: the limit exists to keep floods off shared resources, so counting them must
 * not cost a Redis round trip per bad request, nor depend on Redis being healthy. The price is that an
 * attacker spread by the load balancer over N replicas gets N budgets, which still bounds the lookups
 * to a few per second per address and replica.
 */
export class AuthFailureLimiter {
  private readonly limiter: RateLimiterMemory;

  constructor(
    private readonly limits: AuthFailureLimits,
    private readonly logger: Logger,
  ) {
    this.limiter = new RateLimiterMemory({
      keyPrefix: 'auth-failures',
      points: limits.failures,
      duration: limits.windowSeconds,
      blockDuration: limits.blockSeconds,
    });
  }

  /** Seconds the client must wait before it is heard again; 0 when it is not refused. */
  async refusedFor(client: string): Promise<number> {
    const standing = await this.limiter.get(client);
    if (!standing || standing.consumedPoints <= this.limits.failures) return 0;
    refusals.add(1);
    return retryAfterSeconds(standing.msBeforeNext);
  }

  /** Counts one failed authentication; the seconds to wait when the client is now over its budget, else 0. */
  async failed(client: string): Promise<number> {
    try {
      await this.limiter.consume(client);
      return 0;
    } catch (rejection) {
      if (!(rejection instanceof RateLimiterRes)) throw rejection;
      refusals.add(1);
      if (rejection.consumedPoints === this.limits.failures + 1)
        this.logger.warn(
          { client, failures: this.limits.failures, window_s: this.limits.windowSeconds },
          'client refused after repeated authentication failures',
        );
      return retryAfterSeconds(rejection.msBeforeNext);
    }
  }
}

const retryAfterSeconds = (ms: number) => Math.max(1, Math.ceil(ms / 1000));
