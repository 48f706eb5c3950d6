import { clientNetwork } from '@inbox/service-kit';
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';

export interface SessionLimits {
  /** Sessions one address may open for one integration, per window. */
  perAddress: number;
  /**
   * Sessions one network (`clientNetwork`: an IPv4 /24, an IPv6 /48) may open for one integration, per
   * window: a client rotating its addresses within its network spends this, not the integration's.
   */
  perNetwork: number;
  /** Sessions all addresses may open for one integration, per window. */
  perIntegration: number;
  /** Sessions all of a workspace's widgets may open, per window. */
  perWorkspace: number;
}

/**
 * The budgets a new live chat session spends: its address's and its network's within the integration,
 * the integration's and the workspace's. The shared ones are read before the address's is spent: an
 * address's budget keeps an entry for every address that asks, so a client rotating addresses past a
 * spent budget of its integration or workspace grew the process's memory with each of them.
 */
export class SessionBudgets {
  readonly byAddress: RateLimiterMemory;
  readonly byNetwork: RateLimiterMemory;
  readonly byIntegration: RateLimiterMemory;
  readonly byWorkspace: RateLimiterMemory;

  constructor(limits: SessionLimits, windowSeconds = 60) {
    const budget = (keyPrefix: string, points: number) =>
      new RateLimiterMemory({ keyPrefix, points, duration: windowSeconds });
    this.byAddress = budget('livechat-sessions', limits.perAddress);
    this.byNetwork = budget('livechat-network-sessions', limits.perNetwork);
    this.byIntegration = budget('livechat-integration-sessions', limits.perIntegration);
    this.byWorkspace = budget('livechat-workspace-sessions', limits.perWorkspace);
  }

  /** Spends a session's points; when one budget refuses, the seconds until it has room again. */
  async spend(integrationId: string, workspaceId: string, address: string): Promise<number | undefined> {
    const shared: Array<[RateLimiterMemory, string]> = [
      [this.byIntegration, integrationId],
      [this.byWorkspace, workspaceId],
    ];
    for (const [limiter, key] of shared) {
      const state = await limiter.get(key);
      if (state && state.remainingPoints <= 0) return secondsUntil(state);
    }
    // A budget that refuses leaves the ones before it as they were: requests at once all pass the reads
    // above, and the one a shared budget refuses must not have spent the address's.
    const own: Array<[RateLimiterMemory, string]> = [
      [this.byAddress, `${integrationId}|${address}`],
      [this.byNetwork, `${integrationId}|${clientNetwork(address)}`],
    ];
    const spent: Array<[RateLimiterMemory, string]> = [];
    try {
      for (const budget of [...own, ...shared]) {
        await budget[0].consume(budget[1]);
        spent.push(budget);
      }
      return undefined;
    } catch (error) {
      if (!(error instanceof RateLimiterRes)) throw error;
      for (const [limiter, key] of spent) await limiter.reward(key);
      return secondsUntil(error);
    }
  }
}

const secondsUntil = (state: RateLimiterRes) => Math.max(1, Math.ceil(state.msBeforeNext / 1000));
