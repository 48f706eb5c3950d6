import type { Logger } from '@inbox/service-kit';
import type { IntegrationStore, StoredIntegration } from './store/integrations.js';

export interface IntegrationSweepOptions {
  /** How often the sweep looks for due integrations. */
  everyMs: number;
  /** Integrations worked on at once in this process, at most one per workspace. */
  workers: number;
}

/** An integration a sweep claimed. */
export interface ClaimedIntegration {
  id: string;
  workspace_id: string;
}

export interface IntegrationSweepDeps {
  /** What the sweep does, as its logs say it: "template refresh", "missed callbacks poll". */
  what: string;
  /**
   * Claims one due integration outside `busyWorkspaces`, stamped so that no worker of any replica claims
   * it again until its next turn (a failed one's included).
   */
  claimDue: (busyWorkspaces: readonly string[]) => Promise<ClaimedIntegration | undefined>;
  integrations: IntegrationStore;
  logger: Logger;
  /** Works on one integration; `stopping` aborts its provider calls when the process stops. */
  workOn: (stored: StoredIntegration, workspaceId: string, stopping: AbortSignal) => Promise<void>;
}

export const defaultSweepWorkers = 4;

/**
 * Works on due integrations in the background (template catalogues to refresh, missed callbacks to poll).
 * Each worker claims one due integration at a time outside the workspaces this process is already working
 * for, so a tenant whose provider keeps silent until the timeout holds one worker, never the others'
 * turns, however many integrations it has.
 */
export class IntegrationSweep {
  private readonly busy = new Set<string>();
  private readonly running = new Set<Promise<void>>();
  /** One claim at a time: two at once would each pass by the other's workspace. */
  private claiming: Promise<unknown> = Promise.resolve();
  private timer: NodeJS.Timeout | undefined;
  private readonly stopping = new AbortController();

  constructor(
    private readonly deps: IntegrationSweepDeps,
    private readonly options: IntegrationSweepOptions,
  ) {}

  /**
   * Passes now and every `everyMs`: what a connector's outage left to do (a missed callback, a dropped
   * subscription, a stale catalogue) is taken up as it comes back, and the claims' stamps keep replicas
   * that restart together, or a crash loop, from doing it twice within a turn.
   */
  start(): void {
    this.timer = setInterval(() => void this.pass(), this.options.everyMs);
    this.timer.unref();
    void this.pass();
  }

  /**
   * Brings the workers up to `workers`; each runs until nothing is due that it may take. A worker held by
   * a silent provider keeps running across passes while the others come and go.
   */
  pass(): Promise<void> {
    while (!this.stopping.signal.aborted && this.running.size < this.options.workers) {
      const worker: Promise<void> = this.work()
        .catch((error: unknown) => this.deps.logger.warn({ err: error }, `${this.deps.what} pass failed`))
        .finally(() => this.running.delete(worker));
      this.running.add(worker);
    }
    return Promise.all(this.running).then(() => undefined);
  }

  private async work(): Promise<void> {
    while (!this.stopping.signal.aborted) {
      const due = await this.claim();
      if (!due) return;
      try {
        const stored = await this.deps.integrations.get(due.workspace_id, due.id);
        if (stored) await this.deps.workOn(stored, due.workspace_id, this.stopping.signal);
      } catch (error) {
        this.deps.logger.warn({ err: error, integration_id: due.id }, `${this.deps.what} failed`);
      } finally {
        this.busy.delete(due.workspace_id);
      }
    }
  }

  private claim(): Promise<ClaimedIntegration | undefined> {
    const claimed = this.claiming.then(async () => {
      const due = await this.deps.claimDue([...this.busy]);
      if (due) this.busy.add(due.workspace_id);
      return due;
    });
    this.claiming = claimed.catch(() => undefined);
    return claimed;
  }

  /**
   * Claims nothing more, and ends the work under way: its provider calls are aborted (a catalogue is only
   * a copy, a missed callback is listed again, and the claim's stamp has the next pass take it again), so
   * a provider that keeps silent never holds a stopping process for its timeout.
   */
  async stop(): Promise<void> {
    this.stopping.abort();
    clearInterval(this.timer);
    await Promise.all(this.running);
  }
}
