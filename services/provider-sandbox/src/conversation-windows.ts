/**
 * When each number last wrote to an account. Official-channel emulation will refuse free text outside
 * 24 hours of it, as the real provider does.
 */
export class ConversationWindows {
  readonly #lastInbound = new Map<string, Date>();

  open(channel: string, account: string, from: string, at: Date = new Date()): void {
    this.#lastInbound.set(key(channel, account, from), at);
  }

  lastInbound(channel: string, account: string, from: string): Date | undefined {
    return this.#lastInbound.get(key(channel, account, from));
  }

  clear(): void {
    this.#lastInbound.clear();
  }
}

function key(channel: string, account: string, from: string): string {
  return `${channel}:${account}:${from}`;
}
