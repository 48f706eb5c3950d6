import { sameSecret } from '@inbox/service-kit';

/**
 * Providers accept whatever credentials an account was set up with; the sandbox cannot know them in
 * advance, so the first one it sees for an account becomes that account's credential.
 */
export class CredentialBook {
  readonly #byAccount = new Map<string, string>();

  /** True when the credential is the account's first, or equals the one seen first. */
  accept(channel: string, account: string, credential: string): boolean {
    const key = `${channel}:${account}`;
    const known = this.#byAccount.get(key);
    if (known === undefined) {
      this.#byAccount.set(key, credential);
      return true;
    }
    return sameSecret(credential, known);
  }

  get(channel: string, account: string): string | undefined {
    return this.#byAccount.get(`${channel}:${account}`);
  }

  clear(): void {
    this.#byAccount.clear();
  }
}
