import { setTimeout as sleep } from 'node:timers/promises';
import type { WebhookDelivery } from './channel-emulator.js';
import { OwnAccordPosts } from './own-accord-posts.js';
import { postWebhook, type WebhookAnswer } from './webhook-transport.js';

/** A delivery the receiver did not take, as a provider judges whether and when to deliver it again. */
export interface FailedDelivery {
  /** Failed deliveries so far, this one included. */
  failures: number;
  /** What the receiver answered this time: undefined when it could not be reached or timed out. */
  answer: WebhookAnswer | undefined;
  /** Since the first delivery. */
  elapsedMs: number;
}

/** How a provider delivers a webhook again, of its own accord, when its receiver did not take it. */
export interface RedeliveryPolicy {
  /** The provider's wait before it delivers again, or undefined when it gives up. */
  nextWaitMs(failed: FailedDelivery): number | undefined;
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

/** Whether the receiver took the delivery: any 2xx, as axios and Telegram's webhook actor both judge it. */
export const taken = (answer: WebhookAnswer | undefined): boolean =>
  answer !== undefined && answer.status >= 200 && answer.status < 300;

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

  /**
   * Carries on delivering after `made` deliveries the receiver did not take, the first at `firstAt`, the
   * last answered `last`, as `policy` says; false when the provider gives up at once.
   */
  schedule(
    channel: string,
    account: string,
    delivery: WebhookDelivery,
    policy: RedeliveryPolicy,
    made: { count: number; firstAt: number; last: WebhookAnswer | undefined },
  ): boolean {
    const elapsed = () => Date.now() - made.firstAt;
    const firstWait = policy.nextWaitMs({ failures: made.count, answer: made.last, elapsedMs: elapsed() });
    if (firstWait === undefined) return false;
    const { signal } = this.#resetting;
    this.#posts.schedule(async (stillCurrent) => {
      let failures = made.count;
      for (let wait: number | undefined = firstWait; wait !== undefined; ) {
        // Unref'd: a provider's pending redelivery keeps no process alive.
        await sleep(wait * this.delayScale, undefined, { signal, ref: false });
        if (!stillCurrent()) return;
        const answer = await postWebhook(this.fetchImpl, delivery).catch(() => undefined);
        failures++;
        this.#log.push({
          channel,
          account,
          url: delivery.url,
          attempt: failures,
          status: answer?.status ?? null,
        });
        if (this.#log.length > keptRedeliveries) this.#log.shift();
        if (taken(answer)) return;
        wait = policy.nextWaitMs({ failures, answer, elapsedMs: elapsed() });
      }
    });
    return true;
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
