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

export class SentLog {
  readonly #entries: SentEntry[] = [];

  record(entry: SentEntry): void {
    // A copy, so that later mutation of the parsed request cannot rewrite history. Entries are parsed
    // JSON and strings, which a JSON round trip copies exactly in half structuredClone's time.
    this.#entries.push(JSON.parse(JSON.stringify(entry)) as SentEntry);
  }

  /** Oldest first, as the control API promises "newest last". */
  list(filter: SentFilter = {}): SentEntry[] {
    const to = filter.to === undefined ? undefined : toDigits(filter.to);
    return this.#entries.filter(
      (entry) =>
        (to === undefined || entry.to === to) &&
        (filter.channel === undefined || entry.channel === filter.channel),
    );
  }

  clear(): void {
    this.#entries.length = 0;
  }
}
