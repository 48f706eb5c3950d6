/**
 * What an emulated provider posts of its own accord, a moment after the call that caused it (a failure it
 * found after accepting a send): tracked so that `idle()` can wait for it, and dropped by a reset so that
 * nothing from before it reaches a test that comes after.
 */
export class OwnAccordPosts {
  readonly #pending = new Set<Promise<void>>();
  #generation = 0;

  /** `work` is told whether a reset came since it was scheduled; its errors are the provider's own affair. */
  schedule(work: (stillCurrent: () => boolean) => Promise<void>): void {
    const scheduledIn = this.#generation;
    const task = work(() => scheduledIn === this.#generation).catch(() => undefined);
    this.#pending.add(task);
    void task.finally(() => this.#pending.delete(task));
  }

  reset(): void {
    this.#generation++;
  }

  async idle(): Promise<void> {
    while (this.#pending.size > 0) await Promise.all(this.#pending);
  }
}
