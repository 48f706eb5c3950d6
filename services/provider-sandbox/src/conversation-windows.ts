/**
 * When each number last wrote to an account. Official-channel emulation will refuse free text outside
 * 24 hours of it, as the real provider does.
 */
export class ConversationWindows {
  readonly #lastInbound = new Map<string, Date>();

  /**
   * `whoIs` names the user behind what a channel's control or send names, where the provider knows one
   * user by several forms (WhatsApp's number forms): the window is that user's, whichever form opened it
   * or is sent to.
   */
  constructor(private readonly whoIs: Partial<Record<string, (from: string) => string>> = {}) {}

  open(channel: string, account: string, from: string, at: Date = new Date()): void {
    this.#lastInbound.set(this.key(channel, account, from), at);
  }

  lastInbound(channel: string, account: string, from: string): Date | undefined {
    return this.#lastInbound.get(this.key(channel, account, from));
  }

  private key(channel: string, account: string, from: string): string {
    return `${channel}:${account}:${this.whoIs[channel]?.(from) ?? from}`;
  }

  clear(): void {
    this.#lastInbound.clear();
  }
}
