// A command's caller cannot tell a slow handler from a dead one by waiting: a handler whose process was
// killed mid-command never answers, and its caller would hold its own caller (and the client's
// Idempotency-Key) for the command's whole timeout, up to a minute. So a handler still working tells its
// caller so every `aliveEveryMs`, and a caller that hears nothing for `silenceMs` answers 504 (outcome
// unknown) at once: a retry then reaches a live replica, which finds the work by its key.
import { Slots } from './slots.js';

/** How often a running handler says it is alive, and how long a caller waits without hearing it. */
export const commandLiveness = {
  aliveEveryMs: 1_000,
  // Four missed signs of life: an event loop held up for a few seconds is not taken for a death.
  silenceMs: 4_000,
} as const;

export interface CallWatch {
  /** The handler said it is alive (or answered). */
  heard(): void;
  stop(): void;
}

/**
 * Calls `expire` once the call's whole timeout has passed, or `silenceMs` passed without a word from its
 * handler, whichever comes first. One timer per call, moved only when it fires.
 */
export function watchCall(
  timeoutMs: number,
  silenceMs: number,
  expire: (reason: 'timeout' | 'silence') => void,
): CallWatch {
  const deadline = Date.now() + timeoutMs;
  let heardAt = Date.now();
  let timer: NodeJS.Timeout;
  const check = () => {
    const now = Date.now();
    if (now >= deadline) return expire('timeout');
    if (now - heardAt >= silenceMs) return expire('silence');
    timer = setTimeout(check, Math.min(deadline, heardAt + silenceMs) - now);
  };
  timer = setTimeout(check, Math.min(timeoutMs, silenceMs));
  return {
    heard: () => {
      heardAt = Date.now();
    },
    stop: () => clearTimeout(timer),
  };
}

interface Running {
  since: number;
  signal: () => void;
}

/**
 * The handler side: while a command runs, its caller is told every `aliveEveryMs` that it is still being
 * worked on. One ticker per process serves every running command; a command done within half an
 * interval (nearly all of them) sends nothing extra.
 */
export class AliveSignals {
  private readonly running = new Slots<Running>();
  private ticker: NodeJS.Timeout | undefined;

  constructor(private readonly everyMs: number = commandLiveness.aliveEveryMs) {}

  /** Runs `work`, sending `signal` (which must not throw) every interval until it settles. */
  async during<T>(signal: () => void, work: () => Promise<T>): Promise<T> {
    const slot = this.running.hold({ since: Date.now(), signal });
    this.ticker ??= setInterval(() => this.tick(), this.everyMs).unref();
    try {
      return await work();
    } finally {
      this.running.release(slot);
    }
  }

  private tick(): void {
    const now = Date.now();
    for (const entry of this.running.values()) if (now - entry.since >= this.everyMs / 2) entry.signal();
  }

  /** No more signals: the connection is going away. */
  stop(): void {
    clearInterval(this.ticker);
    this.ticker = undefined;
    this.running.clear();
  }
}
