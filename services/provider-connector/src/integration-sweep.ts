import type { Logger } from '@inbox/service-kit';
import type { IntegrationStore, StoredIntegration } from './store/integrations.js';
import type { TemplateStore } from './store/templates.js';

export interface TemplateSweepOptions {
  /** How old a catalogue may get before it is fetched again. */
  maxAgeMs: number;
  /** How often the sweep looks for due catalogues; also how long a failed one waits for its next try. */
  everyMs: number;
  /** Refreshes under way at once in this process, at most one per workspace. */
  workers: number;
}

export interface TemplateSweepDeps {
  templates: TemplateStore;
  integrations: IntegrationStore;
  logger: Logger;
  /** Refreshes one catalogue; `stopping` aborts its provider call when the process stops. */
  refresh: (stored: StoredIntegration, workspaceId: string, stopping: AbortSignal) => Promise<void>;
}

export const defaultSweepWorkers = 4;

/**
 * Refreshes stale template catalogues in the background. Each worker claims one due integration at a time
 * (TemplateStore.claimDue) outside the workspaces this process is already refreshing, so a tenant whose
 * provider keeps silent until the timeout holds one worker, never the others' turns, however many
 * integrations it has; a failed refresh waits `everyMs` before it is claimed again.
 */
export class TemplateSweep {
  private readonly busy = new Set<string>();
  private readonly running = new Set<Promise<void>>();
  /** One claim at a time: two at once would each pass by the other's workspace. */
  private claiming: Promise<unknown> = Promise.resolve();
  private timer: NodeJS.Timeout | undefined;
  private readonly stopping = new AbortController();

  constructor(
    private readonly deps: TemplateSweepDeps,
    private readonly options: TemplateSweepOptions,
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.pass(), this.options.everyMs);
    this.timer.unref();
  }

  /**
   * Brings the workers up to `workers`; each runs until nothing is due that it may take. A worker held by
   * a silent provider keeps running across passes while the others come and go.
   */
  pass(): Promise<void> {
    while (!this.stopping.signal.aborted && this.running.size < this.options.workers) {
      const worker: Promise<void> = this.work()
        .catch((error: unknown) => this.deps.logger.warn({ err: error }, 'template refresh pass failed'))
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
        if (stored) await this.deps.refresh(stored, due.workspace_id, this.stopping.signal);
      } catch (error) {
        this.deps.logger.warn({ err: error, integration_id: due.id }, 'template refresh failed');
      } finally {
        this.busy.delete(due.workspace_id);
      }
    }
  }

  private claim(): Promise<{ id: string; workspace_id: string } | undefined> {
    const claimed = this.claiming.then(async () => {
      const due = await this.deps.templates.claimDue({
        maxAgeMs: this.options.maxAgeMs,
        retryAfterMs: this.options.everyMs,
        busyWorkspaces: [...this.busy],
      });
      if (due) this.busy.add(due.workspace_id);
      return due;
    });
    this.claiming = claimed.catch(() => undefined);
    return claimed;
  }

  /**
   * Claims nothing more, and ends the refreshes under way: their provider calls are aborted (a catalogue
   * is only a copy, and the claim's stamp has the next pass take it again), so a provider that keeps
   * silent never holds a stopping process for its timeout.
   */
  async stop(): Promise<void> {
    this.stopping.abort();
    clearInterval(this.timer);
    await Promise.all(this.running);
  }
}
