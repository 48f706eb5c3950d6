import { randomUUID } from 'node:crypto';
import type { Bus } from '@inbox/bus';
import { type CallbackKeptEvent, eventTypes } from '@inbox/contracts';
import { maxEventBytes } from '@inbox/db';
import { captureContext, meter, startSpan, withCapturedContext } from '@inbox/telemetry';
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import type { InboundBatch } from '../adapters/channel-adapter.js';
import { adapterFor } from '../adapters/index.js';
import {
  CallbackInbox,
  type KeptBacklog,
  type KeptCallback,
  type LeaseOptions,
} from '../store/callback-inbox.js';
import { ExpiringCache } from '../store/expiring-cache.js';
import type { CallbackIntegration } from '../store/integrations.js';
import { type InboundDeps, takeIn } from './inbound.js';

export interface KeptCallbacksOptions extends LeaseOptions {
  /** Integrations recorded at once, each of another workspace. */
  lanes: number;
  /** How often a worker looks for callbacks that others kept, or whose backoff ended. */
  pollMs: number;
  /** How long after it reached the inbox a callback whose recording keeps failing is tried again; then it is given up. */
  keepForMs: number;
  /** How often the backlog gauges are read from Postgres. */
  backlogRefreshMs: number;
  /**
   * What one workspace's callbacks kept on the bus while Postgres refused them may weigh in an hour, in
   * this process: what a flood in an outage costs the broker, as `keptBytesPerWorkspace` bounds what it
   * costs Postgres.
   */
  busBytesPerWorkspaceHour: number;
}

export const defaultKeptCallbacksOptions: KeptCallbacksOptions = {
  round: 100,
  perIntegration: 10,
  // Ten callbacks of up to 5,000 items each, or ten notified resources fetched within the provider
  // timeout: well within it.
  leaseMs: 2 * 60_000,
  lanes: 8,
  pollMs: 1_000,
  keepForMs: 24 * 3_600_000,
  backlogRefreshMs: 15_000,
  busBytesPerWorkspaceHour: 64 * 2 ** 20,
};

/**
 * How often a callback kept on the bus is delivered to be put in the inbox before it is dead-lettered:
 * each delivery waits out an outage in place for up to ten minutes (busDefaults.outageWaitMs), so a day
 * of Postgres refusing it.
 */
export const keptOnBusDeliveries = 144;

const keptMeter = meter('connector');
const outcomes = keptMeter.createCounter('connector.kept_callbacks', {
  description:
    'Callbacks kept to be recorded after the answer (Z-API, Mercado Livre), by outcome: kept, refused_full (their workspace had too many kept), kept_on_bus (Postgres refused them, of any channel), refused_bus_full (and their workspace had put too many there), taken_from_bus (into the inbox, once Postgres took them), recorded, postponed after a failure, given_up after keepForMs, dropped with their integration',
});

// Every replica reads the same backlog, of every workspace: a dashboard takes their max.
let backlog: KeptBacklog = { callbacks: 0, bytes: 0, oldestAgeSeconds: 0 };
keptMeter
  .createObservableGauge('connector.kept_callbacks.backlog', {
    description: 'Kept callbacks not yet recorded, of every workspace (read every 15 s)',
  })
  .addCallback((result) => result.observe(backlog.callbacks));
keptMeter
  .createObservableGauge('connector.kept_callbacks.backlog_bytes', {
    description: 'What the kept callbacks not yet recorded weigh as read, in bytes (read every 15 s)',
  })
  .addCallback((result) => result.observe(backlog.bytes));
keptMeter
  .createObservableGauge('connector.kept_callbacks.oldest_age', {
    description: 'How long the oldest kept callback not yet recorded has waited (read every 15 s)',
    unit: 's',
  })
  .addCallback((result) => result.observe(backlog.oldestAgeSeconds));

/** How often a workspace whose kept callbacks are at their bound, or go to the bus, is logged, at most. */
const fullLoggedMs = 30_000;

/** The wait before a failed callback is tried again: doubling from a second, at most five minutes. */
const backoffMs = (attempts: number) => Math.min(1_000 * 2 ** Math.max(0, attempts - 1), 5 * 60_000);

/**
 * Records the callbacks the inbound routes kept (`callbackIntake: 'kept'`), leased from the callback
 * inbox in rounds that take workspaces in turns, in `lanes` lanes: each on one integration's callbacks at
 * a time, in the order they came, no two on one workspace; a failure is tried again after a backoff
 * without holding the integration's later callbacks. A callback is forgotten only once recorded; a worker
 * that dies meanwhile leaves it to the next once its lease ends, and recording it again takes each
 * message in once (inbound_seen).
 */
export class KeptCallbacks {
  private readonly inbox: CallbackInbox;
  private readonly lanes = new Set<Promise<void>>();
  /** Leased integrations' callbacks no lane has taken yet, in the lease's order. */
  private readonly pending: KeptCallback[][] = [];
  /** The workspaces the lanes are recording for. */
  private readonly busy = new Set<string>();
  private leasing: Promise<unknown> = Promise.resolve();
  private wanted = false;
  private stopping = false;
  private timer: NodeJS.Timeout | undefined;
  private backlogTimer: NodeJS.Timeout | undefined;
  private readonly fullLogged = new ExpiringCache<string, true>(fullLoggedMs, 10_000);
  private readonly busLogged = new ExpiringCache<string, true>(fullLoggedMs, 10_000);
  private readonly busBudget: RateLimiterMemory;

  /** `bus` keeps the callbacks Postgres refuses (`keep`); without it they fail, and their providers' answer with them. */
  constructor(
    private readonly deps: InboundDeps & { bus?: Pick<Bus, 'publish'> },
    private readonly options: KeptCallbacksOptions = defaultKeptCallbacksOptions,
  ) {
    this.inbox = new CallbackInbox(deps.pool);
    this.busBudget = new RateLimiterMemory({
      keyPrefix: 'kept-on-bus',
      points: options.busBytesPerWorkspaceHour,
      duration: 3_600,
    });
  }

  /**
   * Keeps a verified batch of the integration's, to be recorded here soon, in the trace it came in; false
   * when its workspace's kept callbacks would weigh more than `maxBytes`. While Postgres refuses it (down,
   * failing over, out of connections), on the bus, to be put in the inbox once Postgres takes it: the
   * provider delivers it once, and an error answer would lose it.
   */
  async keep(found: CallbackIntegration, batch: InboundBatch, maxBytes: number): Promise<boolean> {
    const { workspaceId, integration } = found;
    const traceContext = captureContext();
    let kept: boolean;
    try {
      // Found out of reach a moment ago: not waited for again.
      if (this.deps.bus) this.deps.store.skipWhileOutOfReach();
      kept = await this.inbox.keep(workspaceId, integration.id, batch, traceContext, maxBytes);
      outcomes.add(1, { outcome: kept ? 'kept' : 'refused_full' });
    } catch (error) {
      if (!this.deps.bus || !this.deps.store.noteOutage(error)) throw error;
      kept = await this.keepOnBus(found, batch, traceContext, error);
      outcomes.add(1, { outcome: kept ? 'kept_on_bus' : 'refused_bus_full' });
    }
    if (kept) this.wake();
    else if (!this.fullLogged.get(workspaceId)) {
      this.fullLogged.set(workspaceId, true);
      this.deps.logger.error(
        { integration_id: integration.id, workspace_id: workspaceId, max_bytes: maxBytes },
        'inbound callbacks refused: their workspace has too many kept and not yet recorded',
      );
    }
    return kept;
  }

  /**
   * Publishes a callback Postgres refused, within what its workspace may put on the bus in an hour (false
   * when that is spent). Throws the refusal when the callback is too large for the bus, or the bus refuses
   * it too.
   */
  private async keepOnBus(
    { workspaceId, integration }: CallbackIntegration,
    batch: InboundBatch,
    traceContext: Record<string, string>,
    refusal: unknown,
  ): Promise<boolean> {
    const data: CallbackKeptEvent = {
      workspace_id: workspaceId,
      integration_id: integration.id,
      batch: batch as unknown as CallbackKeptEvent['batch'],
      trace_context: traceContext,
      received_at: new Date().toISOString(),
    };
    const bytes = Buffer.byteLength(JSON.stringify(data));
    if (bytes > maxEventBytes) throw refusal;
    try {
      await this.busBudget.consume(workspaceId, bytes);
    } catch (spent) {
      if (!(spent instanceof RateLimiterRes)) throw spent;
      return false;
    }
    await this.deps.bus!.publish({
      id: randomUUID(),
      type: eventTypes.callbackKept,
      workspace_id: workspaceId,
      occurred_at: data.received_at,
      data,
    });
    if (!this.busLogged.get(workspaceId)) {
      this.busLogged.set(workspaceId, true);
      this.deps.logger.warn(
        { integration_id: integration.id, workspace_id: workspaceId, err: refusal },
        'inbound callbacks kept on the bus: Postgres refuses them',
      );
    }
    return true;
  }

  /**
   * Puts a callback kept on the bus in the inbox, in its place among the integration's by when it came.
   * Not held to its workspace's bound: the bus held it to one already, and refused now it would be lost. A
   * Postgres still refusing it throws, and the bus delivers it again; delivered twice, it is kept twice
   * and its messages are still taken in once (inbound_seen).
   */
  async takeFromBus(event: CallbackKeptEvent): Promise<void> {
    await this.inbox.keep(
      event.workspace_id,
      event.integration_id,
      event.batch as unknown as InboundBatch,
      event.trace_context,
      Number.MAX_SAFE_INTEGER,
      new Date(event.received_at),
    );
    outcomes.add(1, { outcome: 'taken_from_bus' });
    this.wake();
  }

  start(): void {
    this.timer = setInterval(() => this.wake(), this.options.pollMs);
    this.timer.unref();
    this.backlogTimer = setInterval(() => void this.refreshBacklog(), this.options.backlogRefreshMs);
    this.backlogTimer.unref();
    void this.refreshBacklog();
    this.wake();
  }

  /** Reads the backlog the gauges report; a failed read leaves them as they were, until the next. */
  async refreshBacklog(): Promise<void> {
    try {
      backlog = await this.inbox.backlog();
    } catch (error) {
      this.deps.logger.warn({ err: error }, 'kept callbacks backlog not read');
    }
  }

  /** Records what is due, now: after a callback was kept here, or on the poll. */
  wake(): void {
    if (this.stopping) return;
    this.wanted = true;
    while (this.lanes.size < this.options.lanes) {
      const lane: Promise<void> = this.lane().finally(() => this.lanes.delete(lane));
      this.lanes.add(lane);
    }
  }

  /** Records every callback due now, and resolves when none is left or the rest wait their backoff. */
  async drain(): Promise<void> {
    this.wake();
    while (this.lanes.size > 0) await Promise.all(this.lanes);
  }

  /** Leases nothing more, and finishes the callbacks being recorded; the rest of their leases go back. */
  async stop(): Promise<void> {
    this.stopping = true;
    clearInterval(this.timer);
    clearInterval(this.backlogTimer);
    while (this.lanes.size > 0) await Promise.all(this.lanes);
    const left = this.pending.splice(0).flat();
    await Promise.all(left.map((kept) => this.inbox.postpone(kept.id, 0)));
  }

  /**
   * One lane: an integration's leased callbacks at a time, in order, never of a workspace another lane
   * is on. A lane is held as long as its integration's recording takes (a notified resource's provider
   * may keep silent until the timeout): the others go on leasing and recording meanwhile, so one tenant
   * holds one lane of a replica, never the rest.
   */
  private async lane(): Promise<void> {
    try {
      for (let queue = await this.next(); queue; queue = await this.next()) {
        const workspace = queue[0]!.workspaceId;
        this.busy.add(workspace);
        try {
          for (const [index, kept] of queue.entries()) {
            if (this.stopping) {
              await Promise.all(queue.slice(index).map((left) => this.inbox.postpone(left.id, 0)));
              break;
            }
            await this.recordOne(kept);
          }
        } finally {
          this.busy.delete(workspace);
        }
      }
    } catch (error) {
      // The next wake or poll tries again; the leases end on their own.
      this.deps.logger.warn({ err: error }, 'kept callbacks not leased');
    }
  }

  /** The next integration's callbacks a lane may take, leased first when none is; undefined when none is due. */
  private async next(): Promise<KeptCallback[] | undefined> {
    for (;;) {
      const index = this.pending.findIndex((queue) => !this.busy.has(queue[0]!.workspaceId));
      if (index >= 0) return this.pending.splice(index, 1)[0];
      if (this.stopping) return undefined;
      // A callback kept while the lease ran may have missed it: one more when a wake came meanwhile.
      this.wanted = false;
      const leased = await this.leaseMore();
      if (leased === 0 && !this.wanted) return undefined;
    }
  }

  /**
   * Leases a round outside the workspaces the lanes are on, and says how many it leased. One lease at a
   * time, each its own after the one before: a lane that joined a lease begun before its own integration
   * was done would find that integration still busy, and stop with its later callbacks due.
   */
  private leaseMore(): Promise<number> {
    const leased = this.leasing.then(async () => {
      const round = await this.inbox.lease({ ...this.options, busyWorkspaces: [...this.busy] });
      const byIntegration = new Map<string, KeptCallback[]>();
      for (const kept of round) {
        const queue = byIntegration.get(kept.integrationId) ?? [];
        queue.push(kept);
        byIntegration.set(kept.integrationId, queue);
      }
      this.pending.push(...byIntegration.values());
      return round.length;
    });
    this.leasing = leased.catch(() => undefined);
    return leased;
  }

  private async recordOne(kept: KeptCallback): Promise<void> {
    const about = { integration_id: kept.integrationId, workspace_id: kept.workspaceId };
    try {
      const recorded = await withCapturedContext(kept.traceContext, () =>
        startSpan('record kept callback', () => this.take(kept), {
          attributes: { 'inbox.integration_id': kept.integrationId, 'inbox.attempt': kept.attempts },
        }),
      );
      if (recorded) {
        await this.inbox.finish(kept.id);
        outcomes.add(1, { outcome: recorded });
        return;
      }
      await this.retryOrGiveUp(kept, about, undefined);
    } catch (error) {
      await this.retryOrGiveUp(kept, about, error).catch((failed: unknown) =>
        this.deps.logger.warn({ ...about, err: failed }, 'kept callback not postponed: its lease will end'),
      );
    }
  }

  /** 'recorded', 'dropped' when its integration is gone, or undefined when a notified resource was not read. */
  private async take(kept: KeptCallback): Promise<'recorded' | 'dropped' | undefined> {
    const { stored } = await this.deps.store.forCallback(kept.integrationId);
    const adapter = stored && adapterFor(stored.integration.channel);
    if (!stored || !adapter || stored.workspaceId !== kept.workspaceId) {
      this.deps.logger.warn(
        { integration_id: kept.integrationId, workspace_id: kept.workspaceId },
        'kept callback dropped: its integration is gone',
      );
      return 'dropped';
    }
    return (await takeIn(this.deps, stored, adapter, kept.batch)) ? 'recorded' : undefined;
  }

  private async retryOrGiveUp(
    kept: KeptCallback,
    about: { integration_id: string; workspace_id: string },
    error: unknown,
  ): Promise<void> {
    // Counted from when it reached the inbox: one kept on the bus through a long outage gets its day too.
    if (Date.now() - kept.keptAt.getTime() >= this.options.keepForMs) {
      this.deps.logger.error(
        { ...about, err: error, attempts: kept.attempts, received_at: kept.receivedAt.toISOString() },
        'kept callback given up: it could not be recorded in time',
      );
      await this.inbox.finish(kept.id);
      outcomes.add(1, { outcome: 'given_up' });
      return;
    }
    const delayMs = backoffMs(kept.attempts);
    this.deps.logger.warn(
      { ...about, err: error, attempts: kept.attempts, retry_in_ms: delayMs },
      'kept callback not recorded: tried again later',
    );
    await this.inbox.postpone(kept.id, delayMs);
    outcomes.add(1, { outcome: 'postponed' });
  }
}
