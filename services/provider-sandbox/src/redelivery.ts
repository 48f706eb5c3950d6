import { setTimeout as sleep } from 'node:timers/promises';
import type { WebhookDelivery } from './channel-emulator.js';
import { OwnAccordPosts } from './own-accord-posts.js';
import { deliverWebhook } from './webhook-transport.js';

/** How a provider delivers a webhook again, of its own accord, when its receiver did not take it. */
export interface RedeliveryPolicy {
  /** Deliveries in all, the first included. */
  attempts: number;
  /** The wait after the first failure; each later one doubles, up to `maxDelayMs`. */
  initialDelayMs: number;
  maxDelayMs: number;
  /** Each wait varies by up to this share of it either way, and is never shorter than the first. */
  jitter: number;
  /** Answers after which it gives up at once; any other non-2xx answer, or none, is tried again. */
  finalStatuses: readonly number[];
}

/** One delivery a provider made again: `status` null when the receiver could not be reached. */
export interface Redelivery {
  channel: string;
  account: string;
  url: string;
  attempt: number;
  status: number | null;
}

/** How many redeliveries `GET /_sandbox/redeliveries` keeps, newest last. */
const keptRedeliveries = 1_000;

/** Whether a provider with `policy` delivers again after this answer (undefined: no answer at all). */
export function deliversAgain(policy: RedeliveryPolicy, status: number | undefined): boolean {
  if (status === undefined) return true;
  return !(status >= 200 && status < 300) && !policy.finalStatuses.includes(status);
}

/**
 * The redeliveries the emulated providers make in the background, at their own pace times `delayScale`
 * (1 is the providers' own; tests shrink it). A reset stops them, and `settled()` waits for the ones under
 * way: kept apart from the other posts a provider makes of its own accord, which `idle()` waits for,
 * since a provider's redeliveries may go on for minutes.
 */
export class Redeliveries {
  readonly #posts = new OwnAccordPosts();
  readonly #log: Redelivery[] = [];
  /** Ends the waits under way: a reset must not leave a redelivery minutes away holding `settled()`. */
  #resetting = new AbortController();

  constructor(
    private readonly fetchImpl: typeof fetch,
    private readonly delayScale: number,
  ) {}

  /** Carries on delivering after `made` deliveries that the receiver did not take. */
  schedule(
    channel: string,
    account: string,
    delivery: WebhookDelivery,
    policy: RedeliveryPolicy,
    made: number,
  ): void {
    const { signal } = this.#resetting;
    this.#posts.schedule(async (stillCurrent) => {
      for (let attempt = made + 1; attempt <= policy.attempts; attempt++) {
        // Unref'd: a provider's pending redelivery keeps no process alive.
        await sleep(this.waitMs(policy, attempt - 1), undefined, { signal, ref: false });
        if (!stillCurrent()) return;
        const status = await deliverWebhook(this.fetchImpl, delivery).catch(() => undefined);
        this.#log.push({ channel, account, url: delivery.url, attempt, status: status ?? null });
        if (this.#log.length > keptRedeliveries) this.#log.shift();
        if (!deliversAgain(policy, status)) return;
      }
    });
  }

  /** The wait after the `failed`-th failed delivery: Evolution's `retryWebhookRequest` formula. */
  private waitMs(policy: RedeliveryPolicy, failed: number): number {
    const doubled = Math.min(policy.initialDelayMs * 2 ** (failed - 1), policy.maxDelayMs);
    const jittered = doubled + doubled * policy.jitter * (Math.random() * 2 - 1);
    return Math.max(policy.initialDelayMs, jittered) * this.delayScale;
  }

  /** The redeliveries made, of one channel's account when given, oldest first. */
  made(channel?: string, account?: string): Redelivery[] {
    return this.#log.filter(
      (entry) => (!channel || entry.channel === channel) && (!account || entry.account === account),
    );
  }

  reset(): void {
    this.#posts.reset();
    this.#resetting.abort();
    this.#resetting = new AbortController();
    this.#log.length = 0;
  }

  settled(): Promise<void> {
    return this.#posts.idle();
  }
}
