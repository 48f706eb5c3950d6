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
  /** Every answer so far, oldest first, this one last: a provider may keep state across them. */
  answers: readonly (WebhookAnswer | undefined)[];
  /** Since the first delivery. */
  elapsedMs: number;
}

/** How a provider delivers a webhook again, of its own accord, when its receiver did not take it. */
export interface RedeliveryPolicy {
  /** The provider's wait before it delivers again, or undefined when it gives up. */
  nextWaitMs(failed: FailedDelivery): number | undefined;
  /** Whether the receiver took the delivery, as the provider judges it; any 2xx when absent. */
  takes?(answer: WebhookAnswer | undefined): boolean;
  /** The delivery as the provider makes its `attempt`th (2 or more); the same bytes when absent. */
  again?(delivery: WebhookDelivery, attempt: number): WebhookDelivery;
}

/** A delivery the provider gave up on: what it sent the last time, and every answer. */
export type GaveUp = (last: WebhookDelivery, answers: readonly (WebhookAnswer | undefined)[]) => void;

/** A delivery a provider is making, with whose it is and how it delivers it again. */
interface Delivering {
  channel: string;
  account: string;
  delivery: WebhookDelivery;
  policy: RedeliveryPolicy;
  gaveUp: GaveUp | undefined;
}

/** One held behind an earlier delivery of its queue, since `heldAt`. */
interface Queued extends Delivering {
  heldAt: number;
}

/**
 * A delivery's failures so far, and its time on the provider's clock: the waits it `waited` as the
 * provider would (scaled down here), and the rest (its posts) as they took.
 */
const failedDelivery = (
  answers: (WebhookAnswer | undefined)[],
  firstAt: number,
  waited = 0,
  delayScale = 1,
): FailedDelivery => ({
  failures: answers.length,
  answer: answers.at(-1),
  answers,
  elapsedMs: waited + Math.max(0, Date.now() - firstAt - waited * delayScale),
});

/**
 * One delivery a provider made in the background: again after one not taken, or one it held behind an
 * earlier one of its queue (`attempt` 1). `status` null when the receiver could not be reached.
 */
export interface Redelivery {
  channel: string;
  account: string;
  url: string;
  attempt: number;
  status: number | null;
}

/** How many redeliveries `GET /_sandbox/redeliveries` keeps, newest last. */
const keptRedeliveries = 1_000;

/**
 * Whether the receiver took the delivery, as the policy judges it, or as axios and Telegram's webhook
 * actor both do: any 2xx.
 */
const taken = (answer: WebhookAnswer | undefined, policy?: RedeliveryPolicy): boolean =>
  policy?.takes ? policy.takes(answer) : answer !== undefined && answer.status >= 200 && answer.status < 300;

/**
 * The redeliveries the emulated providers make in the background, at their own pace times `delayScale`
 * (1 is the providers' own; tests shrink it). A reset stops them, and `settled()` waits for the ones under
 * way: kept apart from the other posts a provider makes of its own accord, which `idle()` waits for,
 * since a provider's redeliveries may go on for minutes.
 */
export class Redeliveries {
  readonly #posts = new OwnAccordPosts();
  readonly #log: Redelivery[] = [];
  /** The queues a delivery is being delivered in, each with the deliveries held behind it, oldest first. */
  readonly #queues = new Map<string, Queued[]>();
  /** Ends the waits under way: a reset must not leave a redelivery minutes away holding `settled()`. */
  #resetting = new AbortController();

  constructor(
    private readonly fetchImpl: typeof fetch,
    private readonly delayScale: number,
  ) {}

  /**
   * Goes on after the deliveries `made` (their answers oldest first, undefined where the receiver could
   * not be reached), the first at `firstAt`: when the last was not taken, delivers again as `policy` says,
   * and says true; when it was, or the provider gives up at once, lets the delivery's queue (`hold`) go
   * on, and says false.
   */
  followUp(
    channel: string,
    account: string,
    delivery: WebhookDelivery,
    policy: RedeliveryPolicy,
    made: { answers: (WebhookAnswer | undefined)[]; firstAt: number },
    gaveUp?: GaveUp,
  ): boolean {
    const { answers, firstAt } = made;
    if (taken(answers.at(-1), policy)) {
      this.#release(delivery);
      return false;
    }
    const firstWait = policy.nextWaitMs(failedDelivery(answers, firstAt));
    if (firstWait === undefined) {
      gaveUp?.(delivery, answers);
      this.#release(delivery);
      return false;
    }
    this.#posts.schedule((stillCurrent) =>
      this.#carryOn(
        { channel, account, delivery, policy, gaveUp },
        answers,
        firstAt,
        firstWait,
        stillCurrent,
      ),
    );
    return true;
  }

  /**
   * Whether the delivery waits behind an earlier one of its queue (Telegram: one queue per chat) that is
   * still being delivered: it then goes out once that one is taken or given up, and is delivered again
   * as `policy` says. Otherwise its queue is the caller's until its `followUp`.
   */
  hold(
    channel: string,
    account: string,
    delivery: WebhookDelivery,
    policy: RedeliveryPolicy,
    gaveUp?: GaveUp,
  ): boolean {
    if (delivery.queue === undefined) return false;
    const held = this.#queues.get(delivery.queue);
    if (!held) {
      this.#queues.set(delivery.queue, []);
      return false;
    }
    held.push({ channel, account, delivery, policy, gaveUp, heldAt: Date.now() });
    return true;
  }

  /** Lets the delivery's queue go on: it was taken, or is given up. */
  #release(delivery: WebhookDelivery): void {
    if (delivery.queue !== undefined) this.#next(delivery.queue);
  }

  /** Delivers after `wait`, and again as the policy says until taken; then lets the queue's next go. */
  async #carryOn(
    { channel, account, delivery, policy, gaveUp }: Delivering,
    answers: (WebhookAnswer | undefined)[],
    firstAt: number,
    firstWait: number,
    stillCurrent: () => boolean,
  ): Promise<void> {
    const { signal } = this.#resetting;
    let sent = delivery;
    let waited = 0;
    try {
      for (let wait: number | undefined = firstWait; wait !== undefined; ) {
        // Unref'd: a provider's pending redelivery keeps no process alive.
        await sleep(wait * this.delayScale, undefined, { signal, ref: false });
        waited += wait;
        if (!stillCurrent()) return;
        const attempt = answers.length + 1;
        sent = attempt > 1 && policy.again ? policy.again(delivery, attempt) : delivery;
        const answer = await postWebhook(this.fetchImpl, sent).catch(() => undefined);
        answers.push(answer);
        this.#log.push({
          channel,
          account,
          url: delivery.url,
          attempt: answers.length,
          status: answer?.status ?? null,
        });
        if (this.#log.length > keptRedeliveries) this.#log.shift();
        if (taken(answer, policy)) return;
        wait = policy.nextWaitMs(failedDelivery(answers, firstAt, waited, this.delayScale));
      }
      if (stillCurrent()) gaveUp?.(sent, answers);
    } finally {
      if (stillCurrent()) this.#release(delivery);
    }
  }

  /** The queue's next held delivery, delivered now; or the queue is free. */
  #next(queue: string): void {
    const following = this.#queues.get(queue)?.shift();
    if (!following) {
      this.#queues.delete(queue);
      return;
    }
    // Its time runs from when it came, as an update's expiry runs from its message's date.
    this.#posts.schedule((stillCurrent) => this.#carryOn(following, [], following.heldAt, 0, stillCurrent));
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
    this.#queues.clear();
  }

  settled(): Promise<void> {
    return this.#posts.idle();
  }
}
