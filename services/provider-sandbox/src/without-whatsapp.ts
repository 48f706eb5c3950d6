import { whatsappNumber } from './whatsapp-number.js';

/**
 * Numbers with no WhatsApp account: a mistyped number, a landline, someone who deleted the app. WhatsApp
 * itself knows them, so every WhatsApp provider's emulator refuses or fails a send to one, each as its
 * provider tells it. Kept by the number WhatsApp would name the account by, so either form of a
 * Brazilian, Mexican or Argentine number is the same absent account.
 */
export class NumbersWithoutWhatsApp {
  readonly #numbers = new Set<string>();

  add(digits: string): void {
    this.#numbers.add(whatsappNumber(digits));
  }

  has(digits: string): boolean {
    return this.#numbers.has(whatsappNumber(digits));
  }

  clear(): void {
    this.#numbers.clear();
  }
}
