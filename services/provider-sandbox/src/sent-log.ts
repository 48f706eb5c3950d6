import { toDigits } from './phone-digits.js';

export interface SentEntry {
  channel: string;
  account: string;
  to: string;
  method: string;
  path: string;
  body: unknown;
  provider_message_id: string;
  received_at: string;
}

export interface SentFilter {
  to?: string;
  channel?: string;
}

/** How many sends the log keeps by default: more than a fault run or a bench load sends. */
export const DEFAULT_SENT_LOG_LIMIT = 20_000;

/**
 * What the emulated providers were sent, newest last, up to `limit` entries: a sandbox that runs for
 * days (a local stack left up, a soak) keeps its newest sends and counts the ones it let go, instead of
 * growing without bound.
 */
export class SentLog {
  #entries: SentEntry[] = [];
  /** Entries let go since the last clear, oldest first. */
  #dropped = 0;

  /** How many entries it keeps; the emulators keep as many issued message ids (issued-messages.ts). */
  constructor(readonly limit = DEFAULT_SENT_LOG_LIMIT) {
    if (!Number.isInteger(limit) || limit < 1) throw new Error('the sent log keeps at least one entry');
  }

  record(entry: SentEntry): void {
    // A copy, so that later mutation of the parsed request cannot rewrite history. Entries are parsed
    // JSON and strings, which a JSON round trip copies exactly in half structuredClone's time.
    this.#entries.push(JSON.parse(JSON.stringify(entry)) as SentEntry);
    // Let go of the oldest a tenth of the limit at a time, so a send does not move the whole log.
    const over = this.#entries.length - this.limit;
    if (over >= Math.max(1, Math.floor(this.limit / 10))) {
      this.#entries = this.#entries.slice(over);
      this.#dropped += over;
    }
  }

  /** Sends let go to stay within the limit since the last clear. */
  get dropped(): number {
    return this.#dropped + Math.max(0, this.#entries.length - this.limit);
  }

  /** Oldest first, as the control API promises "newest last"; at most the newest `limit`. */
  list(filter: SentFilter = {}): SentEntry[] {
    const to = filter.to === undefined ? undefined : toDigits(filter.to);
    const kept = this.#entries.length > this.limit ? this.#entries.slice(-this.limit) : this.#entries;
    return kept.filter(
      (entry) =>
        (to === undefined || entry.to === to) &&
        (filter.channel === undefined || entry.channel === filter.channel),
    );
  }

  clear(): void {
    this.#entries = [];
    this.#dropped = 0;
  }
}
