import { type IntegrationChannel, inboundChannels } from '@inbox/contracts';
import type { Logger } from '@inbox/service-kit';
import { meter } from '@inbox/telemetry';
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import { ExpiringCache } from '../store/expiring-cache.js';
import type { CallbackIntegration, IntegrationStore } from '../store/integrations.js';
import { WorkspaceTurns } from './workspace-turns.js';

export interface CallbackLimits {
  /** Callbacks one integration may send per second, on average. */
  perSecond: number;
  /** Callbacks one integration may send at once. */
  burst: number;
  /** `perSecond` and `burst` of a channel whose provider calls faster than most. */
  channelRates: Partial<Record<IntegrationChannel, { perSecond: number; burst: number }>>;
  /**
   * The same for all of one workspace's integrations together (items charged alike), so a workspace's
   * budget is not one per integration it creates; unbounded when `Infinity`.
   */
  workspacePerSecond: number;
  workspaceBurst: number;
  /** Callbacks from one client address naming integrations looked up in vain, per window. */
  unknownPerWindow: number;
  unknownWindowSeconds: number;
  /** How long an address over that budget is refused. */
  unknownBlockSeconds: number;
  /** Messages, statuses and notified resources one callback may carry; a bigger one is refused (413). */
  itemsPerCallback: number;
  /**
   * Bytes of body that count as one item: verifying and parsing cost by size, whatever a body carries,
   * so a callback counts as its items or as its size in these pieces, whichever is more.
   */
  bytesPerItem: number;
  /** Callbacks of one workspace's integrations this process reads and records at once (WorkspaceTurns). */
  perWorkspaceInFlight: number;
  /** And how many more may wait for a turn before one is refused (429). */
  perWorkspaceWaiting: number;
  /**
   * What one workspace's callbacks kept and not yet recorded may weigh, as read (`callbackIntake:
   * 'kept'`); past it, its next ones are refused (429) until the workers catch up.
   */
  keptBytesPerWorkspace: number;
}

/**
 * Generous for a provider (they batch, and a WhatsApp number behind Evolution or Z-API sends a few
 * messages per second at most, each bringing back up to five callbacks on Z-API: its statuses, its
 * on-send outcome and its sent-by-me echo), but one integration's flood, or its stuck provider retrying,
 * takes a bounded share of the connector.
 */
export const defaultCallbackLimits: CallbackLimits = {
  perSecond: 50,
  burst: 200,
  channelRates: {
    // Meta's Cloud API sends 80 messages a second per number by default (up to 1,000 raised: its
    // throughput documentation), each with up to three statuses (sent, delivered, read) besides the
    // customers' messages: a campaign at the default rate is some 240 callbacks a second, which 50
    // refused, and Meta's backoff then held back the customers' replies too.
    'chat-official': { perSecond: 300, burst: 1_200 },
  },
  // Above any one integration's, so one number's campaign is not cut at its workspace's budget.
  workspacePerSecond: 600,
  workspaceBurst: 2_400,
  unknownPerWindow: 50,
  unknownWindowSeconds: 10,
  unknownBlockSeconds: 30,
  // Meta aggregates at most 1,000 updates in one notification (its Graph API webhooks documentation),
  // an update one message or status or a few; the others send one or a few. Refused, a batch would be
  // retried (for up to 7 days, the Cloud API's) and then lost, so the bound leaves a margin.
  itemsPerCallback: 5_000,
  // A provider's callback of one message or status is a few KiB; a 1 MiB body counts as 64.
  bytesPerItem: 16 * 1024,
  perWorkspaceInFlight: 8,
  perWorkspaceWaiting: 200,
  // Some tens of thousands of Z-API callbacks (a message is about a kilobyte): minutes of a busy
  // workspace's traffic while Postgres or the workers are down, and a bounded share of the database for
  // a flood of its own.
  keptBytesPerWorkspace: 64 * 2 ** 20,
};

/** Charges one callback as what it costs becomes known; never twice for the same cost. */
export interface CallbackBill {
  /** Its body's size. */
  body(): Promise<void>;
  /** Its items, or its size if more. */
  items(items: number): Promise<void>;
  /**
   * A 429 when its budgets were put in debt by others since it was admitted, to be answered before
   * anything is fetched or recorded (its items are then not charged): callbacks admitted at once each
   * carried up to itemsPerCallback, all taken in, so a workspace's turns let eight times that in before
   * one was refused.
   */
  owedToOthers(): Promise<RateRefusal | undefined>;
}

export type Admission =
  /** `release` when the callback has been answered: its workspace's turn is free again. */
  | { admitted: true; stored: CallbackIntegration; release: () => void }
  | { admitted: false; status: 404 }
  | { admitted: false; status: 429; retryAfterSeconds: number; reason?: string };

type RateRefusal = Extract<Admission, { status: 429 }>;

const refusals = meter('connector').createCounter('connector.inbound.refusals', {
  description:
    'Provider callbacks refused before they were recorded (most before their body was read), by reason',
});

/** How long an integration found for a callback stays one a blocked address may still reach. */
const servedMs = 30 * 60_000;

// Only channels whose providers deliver messages have callback URLs.
const channels = new Set<string>(inboundChannels);

/**
 * Decides, before a callback's body is read, whether the connector takes it: the integration must
 * exist, be of the URL's channel and be connected, be within its own and its workspace's callback
 * budgets, and take one of its workspace's turns (waiting for one when they are all taken); a client
 * address that keeps naming integrations that do not exist is refused for a while. Callback URLs carry no
 * credentials a caller must show before this point, so each of these keeps an unauthenticated caller
 * from costing more than a memory lookup.
 */
export class CallbackAdmission {
  private readonly perIntegration: Budget;
  /** Channels with rates of their own (`channelRates`), each integration of theirs with its own budget. */
  private readonly perIntegrationOf = new Map<string, Budget>();
  private readonly perWorkspace: Budget | undefined;
  private readonly unknownCallers: RateLimiterMemory;
  private readonly turns: WorkspaceTurns;
  /**
   * Integrations this process found lately, for as long as an address may stay blocked many times over:
   * the store trusts a row it read for seconds only, and a blocked address may look up no other.
   */
  private readonly served = new ExpiringCache<string, true>(servedMs, 50_000);

  /**
   * `budgetPer: 'address'` gives each client address its own budget within an integration: for an API
   * whose integration ids are public (the live chat widget's, in every page that embeds it), where one
   * budget per integration is one that anyone can spend, and every visitor of the site is then refused.
   * Providers' callbacks keep one per integration: their URLs are known to the provider and the tenant,
   * and a provider calls from addresses every tenant shares.
   */
  constructor(
    private readonly store: Pick<IntegrationStore, 'forCallback'>,
    private readonly logger: Logger,
    private readonly limits: CallbackLimits = defaultCallbackLimits,
    private readonly budgetPer: 'integration' | 'address' = 'integration',
  ) {
    this.perIntegration = new Budget('callbacks', limits.burst, limits.perSecond);
    for (const [channel, rate] of Object.entries(limits.channelRates)) {
      if (rate)
        this.perIntegrationOf.set(channel, new Budget(`callbacks-${channel}`, rate.burst, rate.perSecond));
    }
    this.perWorkspace =
      limits.workspacePerSecond === Number.POSITIVE_INFINITY
        ? undefined
        : new Budget('workspace-callbacks', limits.workspaceBurst, limits.workspacePerSecond);
    this.unknownCallers = new RateLimiterMemory({
      keyPrefix: 'unknown-callbacks',
      points: limits.unknownPerWindow,
      duration: limits.unknownWindowSeconds,
      blockDuration: limits.unknownBlockSeconds,
    });
    this.turns = new WorkspaceTurns(limits.perWorkspaceInFlight, limits.perWorkspaceWaiting);
  }

  get itemsPerCallback(): number {
    return this.limits.itemsPerCallback;
  }

  get keptBytesPerWorkspace(): number {
    return this.limits.keptBytesPerWorkspace;
  }

  async admit(channel: string, integrationId: string, address: string): Promise<Admission> {
    const blocked = await this.unknownCallers.get(address);
    const isBlocked = blocked !== null && blocked.consumedPoints > this.limits.unknownPerWindow;
    // A path that names no integration costs nothing, so it does not count against its address: a tenant
    // can point its provider's webhook at any path, and providers call from addresses every tenant
    // shares, which such a count blocked for everyone.
    if (!channels.has(channel) || !/^[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}$/i.test(integrationId)) {
      return isBlocked ? this.refusedCaller(blocked) : this.unknown(address, false);
    }
    // A blocked address still reaches the integrations this process has served lately: providers call
    // from shared addresses (one Meta range serves every tenant), so a sprayer there must not stop the
    // others' callbacks; only a lookup of an id never served is refused (and the provider retries later).
    const { stored, queried } = await this.store.forCallback(integrationId, {
      cachedOnly: isBlocked && !this.served.get(integrationId),
    });
    if (!stored && isBlocked) return this.refusedCaller(blocked);
    if (stored) this.served.set(integrationId, true);
    // Only lookups that reached the database count against the address: ids already known to name
    // nothing cost nothing, and a provider still calling a removed integration is not a sprayer.
    if (!stored) return this.unknown(address, queried);
    if (stored.integration.channel !== channel || !takesCallbacks(stored.integration)) {
      refusals.add(1, { reason: 'not_connected' });
      return { admitted: false, status: 404 };
    }
    const budget = this.integrationBudget(stored);
    const integrationKey = this.integrationKey(integrationId, address);
    const over =
      (await this.spend(budget, integrationKey, 'integration', stored)) ??
      (this.perWorkspace && (await this.spend(this.perWorkspace, stored.workspaceId, 'workspace', stored)));
    if (over) return over;
    // Bodies read and parsed at once cost memory and the event loop: one workspace's integrations,
    // however many, take a bounded share of them.
    const waits = this.turns.full(stored.workspaceId);
    const release = await this.turns.take(stored.workspaceId);
    if (!release) {
      refusals.add(1, { reason: 'workspace_in_flight' });
      return { admitted: false, status: 429, retryAfterSeconds: 1 };
    }
    // The callbacks it waited behind may have carried thousands of items each, charged as they were
    // read: one that waited is taken only if its budgets are not in debt now, or a burst admitted at
    // once would all be taken in, hundreds of times the budget.
    if (waits) {
      const owed =
        (await this.owed(budget, integrationKey, 'integration')) ??
        (this.perWorkspace && (await this.owed(this.perWorkspace, stored.workspaceId, 'workspace')));
      if (owed) {
        refusals.add(1, { reason: owed.reason });
        release();
        // Refused for what others owe: the point it spent is given back, its retry pays it again.
        await budget.limiter.reward(integrationKey, 1);
        await this.perWorkspace?.limiter.reward(stored.workspaceId, 1);
        return owed;
      }
    }
    return { admitted: true, stored, release };
  }

  /**
   * What an admitted callback costs its integration's budget and its workspace's, charged as it is
   * learnt: its body's size once read, then its items once parsed. One body carrying thousands of
   * messages (a provider's batch, or a tenant signing its own), or a mebibyte of anything, costs what as
   * many callbacks would. The callback is taken; the next ones wait their turn (429) until the debt is paid.
   */
  bill(found: CallbackIntegration, bodyBytes: number): CallbackBill {
    const budget = this.integrationBudget(found);
    // Admission charged one.
    let charged = 1;
    const upTo = async (weight: number) => {
      if (weight <= charged) return;
      const more = weight - charged;
      charged = weight;
      await budget.charge(found.integration.id, more);
      await this.perWorkspace?.charge(found.workspaceId, more);
    };
    const sized = Math.ceil(bodyBytes / this.limits.bytesPerItem);
    const owed = async () =>
      (await this.owed(budget, found.integration.id, 'integration')) ??
      (this.perWorkspace && (await this.owed(this.perWorkspace, found.workspaceId, 'workspace')));
    // Whether its budgets owed before its body was charged, and right after: a debt its own body made
    // is its own, and the callback is still taken (a provider's one large batch goes through whole).
    let owedBefore: RateRefusal | undefined;
    let owedAfterBody: RateRefusal | undefined;
    return {
      body: async () => {
        owedBefore = await owed();
        await upTo(sized);
        owedAfterBody = await owed();
      },
      items: (items) => upTo(Math.max(items, sized)),
      owedToOthers: async () => {
        const refused = owedBefore ?? (owedAfterBody ? undefined : await owed());
        if (refused) refusals.add(1, { reason: 'owed_when_read' });
        return refused;
      },
    };
  }

  private integrationBudget(found: CallbackIntegration): Budget {
    return this.perIntegrationOf.get(found.integration.channel) ?? this.perIntegration;
  }

  private integrationKey(integrationId: string, address: string): string {
    return this.budgetPer === 'address' ? `${integrationId}|${address}` : integrationId;
  }

  /** A 429 when the key's budget is spent, or undefined once the callback is charged to it. */
  private async spend(
    budget: Budget,
    key: string,
    of: 'integration' | 'workspace',
    stored: CallbackIntegration,
  ): Promise<Admission | undefined> {
    try {
      await budget.limiter.consume(key);
      return undefined;
    } catch (rejection) {
      if (!(rejection instanceof RateLimiterRes)) throw rejection;
      refusals.add(1, { reason: `${of}_rate` });
      // Once per window, not once per refused callback.
      if (rejection.consumedPoints === budget.burst + 1) {
        this.logger.warn(
          { integration_id: stored.integration.id, workspace_id: stored.workspaceId, burst: budget.burst },
          `inbound callbacks over the ${of} limit: refused with 429`,
        );
      }
      return { admitted: false, status: 429, retryAfterSeconds: retryAfterSeconds(rejection.msBeforeNext) };
    }
  }

  /**
   * A 429 while the key's budget is in debt (charged past its window by items), without spending from
   * it. Not "more spent than the window holds": a refused spend counts too, and a burst's refused last
   * callback would then turn away the ones admitted before it, which owe nothing.
   */
  private async owed(
    budget: Budget,
    key: string,
    of: 'integration' | 'workspace',
  ): Promise<RateRefusal | undefined> {
    const msOwed = await budget.msInDebt(key);
    if (msOwed === 0) return undefined;
    return {
      admitted: false,
      status: 429,
      retryAfterSeconds: retryAfterSeconds(msOwed),
      reason: `${of}_rate`,
    };
  }

  private refusedCaller(blocked: RateLimiterRes): Admission {
    refusals.add(1, { reason: 'unknown_integrations' });
    return { admitted: false, status: 429, retryAfterSeconds: retryAfterSeconds(blocked.msBeforeNext) };
  }

  private async unknown(address: string, counts: boolean): Promise<Admission> {
    refusals.add(1, { reason: 'unknown_integration' });
    if (counts) {
      await this.unknownCallers.consume(address).catch((rejection: unknown) => {
        if (!(rejection instanceof RateLimiterRes)) throw rejection;
        if (rejection.consumedPoints === this.limits.unknownPerWindow + 1) {
          this.logger.warn(
            {
              client: address,
              unknown: this.limits.unknownPerWindow,
              window_s: this.limits.unknownWindowSeconds,
            },
            'client refused after naming too many unknown integrations',
          );
        }
      });
    }
    return { admitted: false, status: 404 };
  }
}

const retryAfterSeconds = (ms: number) => Math.max(1, Math.ceil(ms / 1000));

/**
 * A window holding `burst` callbacks and lasting burst / perSecond seconds: the average rate is
 * perSecond, and a quiet key may send its whole burst at once. What items charge beyond the window's
 * budget is a debt, paid at `perSecond`: the window's end alone would forgive it, and a tenant could then
 * send a window's worth of items every few seconds.
 */
class Budget {
  readonly limiter: RateLimiterMemory;
  /** Keys in debt, blocked for as long as it lasts: the limiter's own count cannot tell debt from refusals. */
  private readonly debts: RateLimiterMemory;

  constructor(
    keyPrefix: string,
    readonly burst: number,
    private readonly perSecond: number,
  ) {
    this.limiter = new RateLimiterMemory({
      keyPrefix,
      points: burst,
      duration: Math.max(1, Math.ceil(burst / perSecond)),
    });
    this.debts = new RateLimiterMemory({ keyPrefix: `${keyPrefix}-debts`, points: 1, duration: 1 });
  }

  async charge(key: string, items: number): Promise<void> {
    const charged = await this.limiter.penalty(key, items);
    const debt = charged.consumedPoints - this.burst;
    if (debt <= 0) return;
    const seconds = Math.ceil(debt / this.perSecond);
    if (seconds * 1000 > charged.msBeforeNext) await this.limiter.block(key, seconds);
    await this.debts.block(key, Math.max(seconds, Math.ceil(charged.msBeforeNext / 1000)));
  }

  /** How long the key's debt lasts yet; 0 when it owes nothing. */
  async msInDebt(key: string): Promise<number> {
    const debt = await this.debts.get(key);
    return debt && debt.consumedPoints > 1 ? debt.msBeforeNext : 0;
  }
}

/**
 * Connected integrations take callbacks; so does one the provider disconnected by refusing its
 * credentials: its customers keep writing (the provider still delivers, signed as before), and their
 * messages are not to be lost while someone renews the token. An operator's disconnect stops them.
 */
function takesCallbacks(integration: CallbackIntegration['integration']): boolean {
  return integration.status === 'connected' || integration.status_reason === 'credentials_rejected';
}
