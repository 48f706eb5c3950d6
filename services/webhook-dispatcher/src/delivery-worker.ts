import type { Pool } from '@inbox/db';
import type { AddressPolicy, Dispatcher } from '@inbox/outbound-http';
import type { Logger } from '@inbox/service-kit';
import { meter, withCapturedContext, withHttpClientSpan } from '@inbox/telemetry';
import { attemptDelivery, type HttpOutcome, storableError } from './domain/http-attempt.js';
import { isSuccess, nextStep, type RetryPolicy } from './domain/retry-policy.js';
import {
  type DeliveryStore,
  defaultOrderingGapWaitMs,
  type LeasedDelivery,
  type RecordedAttempt,
} from './store/deliveries.js';
import type { DeliveryTarget, EndpointStore, UsableTarget } from './store/endpoints.js';

export interface DeliveryWorkerOptions {
  pool: Pool;
  deliveries: DeliveryStore;
  endpoints: EndpointStore;
  agent: Dispatcher;
  policy: AddressPolicy;
  retry: RetryPolicy;
  logger: Logger;
  timeoutMs: number;
  concurrency: number;
  perEndpointConcurrency: number;
  /**
   * How many of this worker's slots one workspace's attempts may hold (default half of them, however
   * high an endpoint's cap), so no workspace's receivers hold them all while others' deliveries wait.
   */
  perWorkspaceConcurrency?: number;
  disableAfterMs: number;
  /** How often to look for deliveries that other replicas scheduled or that came due. */
  pollMs?: number;
  /**
   * How long an attempt's result waits, at most, for others to be recorded with it (default 5 ms); the
   * batch goes as soon as every attempt under way has its result. Its endpoint's slot stays taken until
   * the record commits, so with an endpoint at its concurrency cap this wait is part of every
   * delivery's cycle.
   */
  recordGatherMs?: number;
  /**
   * How long a woken worker waits for more work before it leases (default 10 ms): it adds this much to a
   * delivery's latency when the worker was idle; a worker with work due does not wait.
   */
  wakeGatherMs?: number;
  /** Events waiting for the scheduling consumer (its lag), for the gauge. */
  consumerLag: () => Promise<number>;
  /**
   * How long a delivery of an ordered endpoint waits for an earlier event of its conversation that has
   * not been scheduled, before it goes anyway (default 10 minutes: past the bus's whole redelivery
   * schedule, so only an event the dispatcher gave up on is skipped).
   */
  orderingGapWaitMs?: number;
  /**
   * How long the loop may go without completing an iteration before readiness says it no longer
   * delivers; by default max(30 s, 3 × the lease time).
   */
  stalledAfterMs?: number;
}

const deliveriesCounter = meter('webhook-dispatcher').createCounter('webhook.deliveries', {
  description:
    'Webhook attempts by outcome: delivered, retry (scheduled again), failed (gave up), gone (410)',
});
const attemptDuration = meter('webhook-dispatcher').createHistogram('webhook.attempt.duration', {
  description: 'Duration of one webhook attempt',
  unit: 'ms',
});
const endpointsDisabled = meter('webhook-dispatcher').createCounter('webhook.endpoints.disabled', {
  description: 'Endpoints disabled automatically (410 or failing too long)',
});
const workerErrors = meter('webhook-dispatcher').createCounter('webhook.worker.errors', {
  description:
    'Errors the delivery worker survived, by step: lease, endpoints, secret (an endpoint secret that does not open), attempt, record',
});
const consumerLag = meter('webhook-dispatcher').createObservableGauge('webhook.consumer.pending', {
  description: 'Events in the stream not yet taken by the dispatcher',
});

type WorkerStep = 'lease' | 'secret' | 'attempt' | 'record' | 'loop';

type LeaseOutcome = 'full' | 'short' | 'failed';

// After repeated failed iterations the loop waits longer, up to this, so a database outage is not
// met with a tight loop of errors.
const maxBackoffMs = 5_000;

/**
 * Leases due deliveries, attempts them with bounded concurrency (overall and per endpoint), and records
 * outcomes in batches: one statement per batch for the attempts, the next schedule and the endpoints'
 * failure clocks. Runs in every replica; leases keep them from attempting the same delivery twice.
 * Deliveries of every workspace share the loop and the batches, so no single error (a database hiccup,
 * an unopenable secret, an answer that cannot be stored) may end the loop or cost other deliveries
 * their record.
 */
export class DeliveryWorker {
  private running = false;
  private loopEnded = false;
  private lastIterationAt = 0;
  private inFlight = 0;
  // Each workspace's attempts in flight here, for its room in the next lease.
  private readonly inFlightByWorkspace = new Map<string, number>();
  private readonly perWorkspace: number;
  private results: RecordedAttempt[] = [];
  // Attempts whose results a flush has taken and is recording.
  private recording = 0;
  private flushing: Promise<void> | undefined;
  private flushEarly: (() => void) | undefined;
  private wakeUp: ((gatherMs: number) => void) | undefined;
  // A wake-up that came while the loop was not paused (leasing, say): the next pause answers it at once,
  // rather than sleeping through work that arrived meanwhile until the next poll.
  private missedWake: number | undefined;
  private endPause: (() => void) | undefined;
  private loop: Promise<void> | undefined;
  private idleWaiters: Array<() => void> = [];

  private lag = 0;
  private lagReadAt = 0;
  // Long enough for one bounded attempt and its recording; short enough that a crashed replica's
  // deliveries are taken over within seconds.
  private readonly leaseMs: number;
  private readonly stalledAfterMs: number;
  // Lease in batches: only when a quarter of the slots are free (or none is busy), so a busy worker
  // asks the database once per batch rather than once per finished attempt.
  private readonly batchThreshold: number;

  constructor(private readonly options: DeliveryWorkerOptions) {
    this.leaseMs = options.timeoutMs + 5_000;
    this.stalledAfterMs = options.stalledAfterMs ?? Math.max(30_000, 3 * this.leaseMs);
    this.batchThreshold = Math.max(1, Math.floor(options.concurrency / 4));
    // Half, even where an endpoint's cap is more: at least an endpoint's cap gave one workspace every
    // slot of a worker whose concurrency is under twice that cap.
    this.perWorkspace = options.perWorkspaceConcurrency ?? Math.max(1, Math.ceil(options.concurrency / 2));
    consumerLag.addCallback((result) => result.observe(this.lag));
  }

  start(): void {
    this.running = true;
    this.loopEnded = false;
    this.lastIterationAt = Date.now();
    this.loop = this.run()
      .catch((error: unknown) => this.options.logger.error({ err: error }, 'delivery worker stopped'))
      .finally(() => {
        this.loopEnded = true;
      });
  }

  /** New work is due (an event scheduled, an endpoint enabled): lease soon, with what comes meanwhile. */
  wake(): void {
    this.signal(this.options.wakeGatherMs ?? 10);
  }

  private signal(gatherMs: number): void {
    if (this.wakeUp) this.wakeUp(gatherMs);
    else this.missedWake = Math.min(this.missedWake ?? gatherMs, gatherMs);
  }

  /**
   * For readiness: false once the loop has ended, or when it has not completed an iteration within
   * `stalledAfterMs` (stuck, or failing every time), since such a worker delivers nothing.
   */
  isLive(): boolean {
    return this.running && !this.loopEnded && Date.now() - this.lastIterationAt <= this.stalledAfterMs;
  }

  /** Takes no new deliveries, lets attempts under way finish, and records them. */
  async stop(): Promise<void> {
    this.running = false;
    this.endPause?.();
    await this.loop;
    if (this.inFlight > 0) await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
    await this.flush();
  }

  private async run(): Promise<void> {
    const { concurrency, pollMs = 500 } = this.options;
    let failures = 0;
    while (this.running) {
      let lease: LeaseOutcome;
      try {
        lease = await this.iterate();
      } catch (error) {
        this.noteError('loop', error, 'delivery worker iteration failed');
        lease = 'failed';
      }
      if (lease === 'failed') {
        failures++;
        await this.pause(Math.min(maxBackoffMs, pollMs * 2 ** Math.min(failures - 1, 10)), false);
        continue;
      }
      failures = 0;
      this.lastIterationAt = Date.now();
      // A full lease suggests more is due, and so does a wake-up that came while a short one ran: both
      // lease again at once. Otherwise what was due was taken or waits for a slot, and the next lease
      // waits for new work (a wake-up), a freed slot (a record) or the poll: leasing again at once after
      // every lease found nothing, one statement in two (bench/RESULTS.md, thirtieth session).
      const more = lease === 'full' || this.missedWake !== undefined;
      if (!more || concurrency - this.inFlight < this.batchThreshold) await this.pause(pollMs, true);
    }
  }

  /** One pass: lease what is due and start its attempts. Full: it took as many as it asked for. */
  private async iterate(): Promise<LeaseOutcome> {
    const free = this.options.concurrency - this.inFlight;
    if (free < this.batchThreshold && this.inFlight > 0) return 'short';
    const limit = Math.min(free, 500);
    this.readLag();
    let leased: Awaited<ReturnType<DeliveryStore['lease']>>;
    // What was scheduled or freed before this lease starts, it sees.
    this.missedWake = undefined;
    try {
      leased = await this.options.deliveries.lease(
        limit,
        this.options.perEndpointConcurrency,
        this.leaseMs,
        this.options.orderingGapWaitMs ?? defaultOrderingGapWaitMs,
        { cap: this.perWorkspace, inFlight: this.inFlightByWorkspace },
      );
    } catch (error) {
      this.noteError('lease', error, 'leasing deliveries failed');
      return 'failed';
    }
    if (leased.length === 0) return 'short';
    const targets = new Map<string, DeliveryTarget | undefined>();
    for (const row of leased) {
      if (targets.has(row.endpoint_id)) continue;
      const target = this.options.endpoints.targetOf(row);
      targets.set(row.endpoint_id, target);
      if (target && !target.usable)
        this.noteError('secret', target.cause, `webhook endpoint unusable: ${target.reason}`, {
          endpoint_id: row.endpoint_id,
          workspace_id: target.workspaceId,
        });
    }
    for (const {
      endpoint_url,
      endpoint_secret_sealed,
      endpoint_previous_secret_sealed,
      ...delivery
    } of leased)
      this.dispatch(delivery, targets.get(delivery.endpoint_id));
    return leased.length === limit ? 'full' : 'short';
  }

  // The gauge's reading, refreshed in the background at most every 5 s: it informs, it never gates.
  private readLag(): void {
    if (Date.now() - this.lagReadAt < 5_000) return;
    this.lagReadAt = Date.now();
    this.options.consumerLag().then(
      (lag) => {
        this.lag = lag;
      },
      () => undefined,
    );
  }

  /**
   * Waits `ms`, or less when woken (if `wakeable`) or stopped. A wake-up for new work is answered
   * `wakeGatherMs` later, so the events scheduled meanwhile share one lease (which reads their
   * endpoints) instead of a lease each.
   */
  private pause(ms: number, wakeable: boolean): Promise<void> {
    // Stopped while not paused (mid-lease, say): no wait for the poll or the backoff.
    if (!this.running) return Promise.resolve();
    const missed = wakeable ? this.missedWake : undefined;
    this.missedWake = undefined;
    return new Promise<void>((resolve) => {
      let timer: NodeJS.Timeout;
      const end = () => {
        clearTimeout(timer);
        this.wakeUp = undefined;
        this.endPause = undefined;
        resolve();
      };
      // A stop ends any pause at once, a wake-up's gather included.
      this.endPause = end;
      if (missed !== undefined) {
        timer = setTimeout(end, missed);
        return;
      }
      timer = setTimeout(end, ms);
      // Only while running: a stop ends the pause through `end` and takes this handle with it.
      this.wakeUp = (gatherMs) => {
        if (!wakeable) return;
        clearTimeout(timer);
        this.wakeUp = undefined;
        if (gatherMs > 0) timer = setTimeout(end, gatherMs);
        else end();
      };
    });
  }

  private dispatch(delivery: LeasedDelivery, target: DeliveryTarget | undefined): void {
    this.inFlight++;
    const workspace = delivery.workspace_id;
    this.inFlightByWorkspace.set(workspace, (this.inFlightByWorkspace.get(workspace) ?? 0) + 1);
    void this.attempt(delivery, target)
      .catch((error: unknown) =>
        // Left to its lease expiry, then attempted again.
        this.noteError('attempt', error, 'webhook attempt failed unexpectedly', this.about(delivery)),
      )
      .finally(() => {
        this.inFlight--;
        const left = (this.inFlightByWorkspace.get(workspace) ?? 1) - 1;
        if (left > 0) this.inFlightByWorkspace.set(workspace, left);
        else this.inFlightByWorkspace.delete(workspace);
        if (this.inFlight === 0) for (const resolve of this.idleWaiters.splice(0)) resolve();
        // Its record has committed, so its endpoint's slot is free now: lease at once.
        if (this.options.concurrency - this.inFlight >= this.batchThreshold) this.signal(0);
      });
  }

  private async attempt(delivery: LeasedDelivery, target: DeliveryTarget | undefined) {
    const at = new Date();
    // A delivery that cannot be posted at all (endpoint deleted, secret unopenable, its event's body
    // gone) fails at once: never posted empty.
    const body = delivery.body;
    const postable = target?.usable && body !== null ? { target, body } : undefined;
    const outcome = postable
      ? await this.send(delivery, postable.target, postable.body)
      : failedOutcome(cannotPost(target, body));
    attemptDuration.record(outcome.durationMs, { outcome: isSuccess(outcome) ? 'success' : 'failure' });
    const step = postable
      ? nextStep(delivery.attempts, outcome, this.options.retry, new Date())
      : { kind: 'give-up' as const, reason: outcome.error ?? 'endpoint deleted' };
    deliveriesCounter.add(1, {
      outcome: { delivered: 'delivered', retry: 'retry', 'give-up': 'failed', 'endpoint-gone': 'gone' }[
        step.kind
      ],
    });
    this.results.push({
      delivery,
      statusCode: outcome.statusCode,
      error: outcome.error ?? (step.kind === 'give-up' ? step.reason : null),
      durationMs: outcome.durationMs,
      responseBody: outcome.responseBody,
      at,
      status: step.kind === 'delivered' ? 'delivered' : step.kind === 'retry' ? 'pending' : 'failed',
      nextAttemptAt: step.kind === 'retry' ? step.at : null,
      endpointGone: step.kind === 'endpoint-gone',
    });
    await this.scheduleFlush();
  }

  /** The attempt, whatever goes wrong in it: an unexpected error is its outcome, retried as any failure. */
  private send(delivery: LeasedDelivery, target: UsableTarget, body: string) {
    return this.tracedAttempt(delivery, target, body).catch((error: unknown) => {
      this.noteError('attempt', error, 'webhook attempt failed unexpectedly', this.about(delivery));
      return failedOutcome(storableError(error));
    });
  }

  /**
   * Each attempt is a span in the trace the event came in with, however much later it runs: the POST's
   * client span, named for the delivery, with the receiver's spans its children.
   */
  private tracedAttempt(delivery: LeasedDelivery, target: UsableTarget, body: string) {
    return withCapturedContext(delivery.trace_context, () =>
      withHttpClientSpan(
        `webhook deliver ${delivery.event_type}`,
        {
          method: 'POST',
          url: target.url,
          attributes: {
            'workspace.id': delivery.workspace_id,
            'webhook.endpoint.id': delivery.endpoint_id,
            'messaging.message.id': delivery.event_id,
          },
        },
        async (span, traceHeaders) => {
          const result = await attemptDelivery(
            {
              workspaceId: delivery.workspace_id,
              url: target.url,
              body,
              eventId: delivery.event_id,
              eventType: delivery.event_type,
              secret: target.secret,
              previousSecret: target.previousSecret,
              traceHeaders,
            },
            this.options,
          );
          span.setAttribute('webhook.attempt', delivery.attempts);
          if (result.statusCode !== null) span.setAttribute('http.response.status_code', result.statusCode);
          return result;
        },
      ),
    );
  }

  // Results wait a moment for others, so a busy worker writes them in batches; once no attempt is left
  // waiting for its receiver, nothing more can join the batch, and it goes.
  private scheduleFlush(): Promise<void> {
    this.flushing ??= new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, this.options.recordGatherMs ?? 5);
      this.flushEarly = () => {
        clearTimeout(timer);
        resolve();
      };
    }).then(() => this.flush());
    if (this.inFlight === this.results.length + this.recording) this.flushEarly?.();
    return this.flushing;
  }

  /**
   * Records a batch in one statement. Batches mix workspaces, so when that fails the rows are
   * recorded one by one, each in a statement of its own: a row that cannot be written costs only its own
   * delivery (left to its lease expiry, then attempted again), never its neighbours' records.
   */
  private async flush(): Promise<void> {
    this.flushing = undefined;
    this.flushEarly = undefined;
    const batch = this.results.splice(0);
    if (batch.length === 0) return;
    this.recording += batch.length;
    try {
      await this.recordAll(batch);
    } finally {
      this.recording -= batch.length;
    }
  }

  private async recordAll(batch: RecordedAttempt[]): Promise<void> {
    try {
      await this.record(batch);
      return;
    } catch (error) {
      this.noteError('record', error, 'recording a batch of webhook attempts failed; now one by one', {
        attempts: batch.length,
      });
    }
    for (const result of batch) {
      try {
        await this.record([result]);
      } catch (error) {
        this.noteError(
          'record',
          error,
          'recording a webhook attempt failed; it is attempted again when its lease expires',
          this.about(result.delivery),
        );
      }
    }
  }

  private async record(batch: RecordedAttempt[]): Promise<void> {
    const disabled = await this.options.deliveries.record(
      this.options.pool,
      batch,
      this.options.disableAfterMs,
    );
    for (const endpoint of disabled) {
      endpointsDisabled.add(1, { reason: endpoint.reason });
      this.options.logger.warn(
        { endpoint_id: endpoint.id, workspace_id: endpoint.workspace_id },
        endpoint.reason === 'gone'
          ? 'webhook endpoint disabled: the receiver answered 410 Gone'
          : 'webhook endpoint disabled: no successful delivery within WEBHOOK_DISABLE_AFTER_HOURS',
      );
    }
  }

  private about(delivery: LeasedDelivery) {
    return {
      delivery_id: delivery.id,
      workspace_id: delivery.workspace_id,
      endpoint_id: delivery.endpoint_id,
    };
  }

  private noteError(step: WorkerStep, error: unknown, message: string, context: object = {}): void {
    workerErrors.add(1, { step });
    this.options.logger.error({ err: error, step, ...context }, message);
  }
}

/** Why a delivery cannot be posted at all. */
function cannotPost(target: DeliveryTarget | undefined, body: string | null): string {
  if (body === null) return 'event body missing';
  return target && !target.usable ? target.reason : 'endpoint deleted';
}

function failedOutcome(error: string): HttpOutcome {
  return { statusCode: null, error, retryAfterSeconds: null, responseBody: null, durationMs: 0 };
}
