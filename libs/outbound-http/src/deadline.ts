/**
 * A time bound for one outbound call: `signal` aborts (with a `TimeoutError`, as `AbortSignal.timeout`'s
 * does) after `timeoutMs`, or when `outer` aborts, with its reason. `clear()` once the call has settled.
 *
 * Why not `AbortSignal.timeout` (and `AbortSignal.any`): its timer cannot be cleared, so every call's
 * signal and timer outlive the call by the whole timeout, until the timer fires or a major collection
 * frees the signal. In the connector under the send load that was some 3,800 of each alive at once,
 * promoted to the old generation with the weak references that tie them together (bench/RESULTS.md,
 * "2026-11-26, eighth session").
 */
export class Deadline {
  readonly signal: AbortSignal;
  private readonly timer: NodeJS.Timeout;
  private readonly detach: (() => void) | undefined;

  constructor(timeoutMs: number, outer?: AbortSignal) {
    const controller = new AbortController();
    this.signal = controller.signal;
    this.timer = setTimeout(
      () => controller.abort(new DOMException(`no answer within ${timeoutMs} ms`, 'TimeoutError')),
      timeoutMs,
    ).unref();
    if (!outer) return;
    if (outer.aborted) {
      controller.abort(outer.reason);
      return;
    }
    const follow = () => controller.abort(outer.reason);
    outer.addEventListener('abort', follow, { once: true });
    this.detach = () => outer.removeEventListener('abort', follow);
  }

  /**
   * `work`, or a rejection with the deadline's reason once the signal aborts, whichever comes first.
   * undici acts on an abort only once the request is on a connection: one still queued for a connection
   * would outlive its bound until it got one (and then be aborted, unsent).
   */
  race<T>(work: Promise<T>): Promise<T> {
    const signal = this.signal;
    if (signal.aborted) {
      work.catch(() => undefined);
      return Promise.reject(signal.reason);
    }
    return new Promise<T>((resolve, reject) => {
      const abort = () => reject(signal.reason);
      signal.addEventListener('abort', abort, { once: true });
      work.then(resolve, reject).finally(() => signal.removeEventListener('abort', abort));
    });
  }

  clear(): void {
    clearTimeout(this.timer);
    this.detach?.();
  }
}
