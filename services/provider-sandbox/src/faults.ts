import type { Response } from 'express';

export const FaultMode = {
  error: 'error',
  timeout: 'timeout',
  rateLimit: 'rate_limit',
  /** The provider takes the message (it is sent, with an id) but its answer never reaches the caller. */
  lostAnswer: 'lost_answer',
  off: 'off',
} as const;
export type FaultMode = (typeof FaultMode)[keyof typeof FaultMode];

export type ActiveFault =
  | { mode: typeof FaultMode.error; status: number }
  | { mode: typeof FaultMode.timeout }
  | { mode: typeof FaultMode.lostAnswer }
  | { mode: typeof FaultMode.rateLimit };

export const DEFAULT_FAULT_STATUS = 500;
export const DEFAULT_FAULT_HOLD_MS = 30_000;

/** Status answered once a held ("timeout") request is finally released. */
const HELD_RESPONSE_STATUS = 504;

// Account-less faults are stored under this key; it cannot collide because real accounts are non-empty.
const EVERY_ACCOUNT = '';

export class FaultBook {
  readonly #byChannel = new Map<string, Map<string, ActiveFault>>();

  set(channel: string, account: string | undefined, fault: ActiveFault): void {
    let faults = this.#byChannel.get(channel);
    if (!faults) {
      faults = new Map();
      this.#byChannel.set(channel, faults);
    }
    faults.set(account ?? EVERY_ACCOUNT, fault);
  }

  /** Without an account every fault of the channel goes, channel-wide and per-account alike. */
  off(channel: string, account: string | undefined): void {
    if (account === undefined) this.#byChannel.delete(channel);
    else this.#byChannel.get(channel)?.delete(account);
  }

  /** An account's own fault wins over a channel-wide one. */
  find(channel: string, account: string): ActiveFault | undefined {
    const faults = this.#byChannel.get(channel);
    return faults?.get(account) ?? faults?.get(EVERY_ACCOUNT);
  }

  clear(): void {
    this.#byChannel.clear();
  }
}

/**
 * Answers a faulted call with the provider's own error shape, or its own rate-limit answer, or holds it
 * like a provider that never answers. The hold timer is unref'd and dropped when the client goes away,
 * so held calls never keep the process alive nor outlive their socket.
 */
export function answerFault(
  fault: ActiveFault,
  res: Response,
  errorBody: (status: number) => unknown,
  holdMs: number,
  rateLimited?: (res: Response) => void,
): void {
  if (fault.mode === FaultMode.error) {
    res.status(fault.status).json(errorBody(fault.status));
    return;
  }
  if (fault.mode === FaultMode.rateLimit) {
    // The controls only set it for a channel that answers it; a bare 429 otherwise.
    if (rateLimited) rateLimited(res);
    else res.status(429).json(errorBody(429));
    return;
  }
  holdAnswer(res, errorBody, holdMs);
}

/** Answers nothing for `holdMs` (then 504), like a provider, or a network, that does not answer. */
export function holdAnswer(res: Response, errorBody: (status: number) => unknown, holdMs: number): void {
  const timer = setTimeout(() => {
    if (!res.writableEnded) res.status(HELD_RESPONSE_STATUS).json(errorBody(HELD_RESPONSE_STATUS));
  }, holdMs);
  timer.unref();
  res.on('close', () => clearTimeout(timer));
}
