/** Counts running handlers so a drain can wait for them, and bounds how many run at once. */
export class InFlight {
  private running = 0;
  private idleWaiters: Array<() => void> = [];
  private slotWaiters: Array<() => void> = [];

  get size(): number {
    return this.running;
  }

  async acquire(limit: number): Promise<void> {
    while (this.running >= limit) await new Promise<void>((resolve) => this.slotWaiters.push(resolve));
    this.running++;
  }

  release(): void {
    this.running--;
    // Every waiter looks again: each may wait for a different limit.
    for (const wake of this.slotWaiters.splice(0)) wake();
    if (this.running === 0) for (const resolve of this.idleWaiters.splice(0)) resolve();
  }

  /** Tracks a promise that was started without acquire(), e.g. a command handler. */
  track<T>(work: Promise<T>): Promise<T> {
    this.running++;
    return work.finally(() => this.release());
  }

  idle(): Promise<void> {
    if (this.running === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }
}
