/**
 * Background work run every `everyMs` beside a service's handlers, one run at a time: a run still going
 * when the next is due is not started again. It never holds the process open; `stop` waits for the run
 * under way, so a stopping service finishes it rather than cutting a statement short.
 */
export class Periodic {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;

  constructor(
    private readonly run: () => Promise<unknown>,
    private readonly everyMs: number,
    private readonly onError: (error: unknown) => void,
  ) {}

  start(): void {
    this.timer = setInterval(() => {
      this.running ??= this.run()
        .catch(this.onError)
        .finally(() => {
          this.running = undefined;
        });
    }, this.everyMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }
}
