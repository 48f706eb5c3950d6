import { type Pool, withTransaction } from '@inbox/db';
import type { AddressPolicy } from '@inbox/outbound-http';
import type { Logger } from '@inbox/service-kit';
import { meter, startSpan, withCapturedContext } from '@inbox/telemetry';
import type { Dispatcher } from 'undici';
import { attemptDelivery } from './domain/http-attempt.js';
import { isSuccess, nextStep, type RetryPolicy } from './domain/retry-policy.js';
import type { AttemptResult, DeliveryStore, LeasedDelivery } from './store/deliveries.js';
import type { EndpointStore } from './store/endpoints.js';

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
  disableAfterMs: number;
  /** How often to look for deliveries that other replicas scheduled or that came due. */
  pollMs?: number;
  /** The scheduling consumer's position: every event up to `ackFloor` is scheduled; `pending` is its lag. */
  consumerPosition: () => Promise<{ ackFloor: number; pending: number }>;
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
const consumerLag = meter('webhook-dispatcher').createObservableGauge('webhook.consumer.pending', {
  description: 'Events in the stream not yet taken by the dispatcher',
});

/**
 * Leases due deliveries, attempts them with bounded concurrency (overall and per endpoint), and records
 * outcomes in batches: one transaction per batch for the attempts, the next schedule and the endpoints'
 * failure clocks. Runs in every replica; leases keep them from attempting the same delivery twice.
 */
export class DeliveryWorker {
  private running = false;
  private inFlight = 0;
  private results: AttemptResult[] = [];
  private flushing: Promise<void> | undefined;
  private wakeUp: (() => void) | undefined;
  private loop: Promise<void> | undefined;
  private idleWaiters: Array<() => void> = [];

  private position = { ackFloor: 0, pending: 0 };

  constructor(private readonly options: DeliveryWorkerOptions) {
    consumerLag.addCallback((result) => result.observe(this.position.pending));
  }

  start(): void {
    this.running = true;
    this.loop = this.run().catch((error: unknown) =>
      this.options.logger.error({ err: error }, 'delivery worker stopped'),
    );
  }

  wake(): void {
    this.wakeUp?.();
  }

  /** Takes no new deliveries, lets attempts under way finish, and records them. */
  async stop(): Promise<void> {
    this.running = false;
    this.wake();
    await this.loop;
    if (this.inFlight > 0) await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
    await this.flush();
  }

  private async run(): Promise<void> {
    const { concurrency, perEndpointConcurrency, timeoutMs, pollMs = 500 } = this.options;
    // Long enough for one bounded attempt and its recording; short enough that a crashed replica's
    // deliveries are taken over within seconds.
    const leaseMs = timeoutMs + 5_000;
    // Lease in batches: only when a quarter of the slots are free (or none is busy), so a busy worker
    // asks the database once per batch rather than once per finished attempt.
    const batchThreshold = Math.max(1, Math.floor(concurrency / 4));
    while (this.running) {
      const free = concurrency - this.inFlight;
      let leased: LeasedDelivery[] = [];
      if (free >= batchThreshold || this.inFlight === 0) {
        try {
          this.position = await this.options.consumerPosition().catch(() => this.position);
          leased = await this.options.deliveries.lease(
            Math.min(free, 500),
            perEndpointConcurrency,
            leaseMs,
            this.position.ackFloor,
          );
        } catch (error) {
          this.options.logger.error({ err: error }, 'leasing deliveries failed');
        }
      }
      if (leased.length > 0) await this.attemptAll(leased);
      // A full lease suggests more is due; otherwise wait for a wake-up, freed slots or the poll.
      if (leased.length === 0 || concurrency - this.inFlight < batchThreshold) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, pollMs);
          this.wakeUp = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      }
    }
  }

  private async attemptAll(leased: LeasedDelivery[]): Promise<void> {
    const targets = await this.options.endpoints.forDelivery([...new Set(leased.map((d) => d.endpoint_id))]);
    for (const delivery of leased) {
      const target = targets.get(delivery.endpoint_id);
      this.inFlight++;
      void this.attempt(delivery, target).finally(() => {
        this.inFlight--;
        if (this.inFlight === 0) for (const resolve of this.idleWaiters.splice(0)) resolve();
        if (this.options.concurrency - this.inFlight >= Math.max(1, Math.floor(this.options.concurrency / 4)))
          this.wake();
      });
    }
  }

  private async attempt(
    delivery: LeasedDelivery,
    target: { url: string; secret: string | null } | undefined,
  ) {
    const at = new Date();
    const outcome = target
      ? await this.tracedAttempt(delivery, target)
      : {
          statusCode: null,
          error: 'endpoint deleted',
          retryAfterSeconds: null,
          responseBody: null,
          durationMs: 0,
        };
    attemptDuration.record(outcome.durationMs, { outcome: isSuccess(outcome) ? 'success' : 'failure' });
    const step = target
      ? nextStep(delivery.attempts, outcome, this.options.retry, new Date())
      : { kind: 'give-up' as const, reason: 'endpoint deleted' };
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
    });
    if (step.kind === 'endpoint-gone') this.gone.add(delivery.endpoint_id);
    await this.scheduleFlush();
  }

  /** Each attempt is a span in the trace the event came in with, however much later it runs. */
  private tracedAttempt(delivery: LeasedDelivery, target: { url: string; secret: string | null }) {
    return withCapturedContext(delivery.trace_context, () =>
      startSpan(
        `webhook deliver ${delivery.event_type}`,
        async (span) => {
          const result = await attemptDelivery(
            {
              url: target.url,
              body: delivery.body,
              eventId: delivery.event_id,
              eventType: delivery.event_type,
              secret: target.secret,
            },
            this.options,
          );
          span.setAttribute('webhook.attempt', delivery.attempts);
          if (result.statusCode !== null) span.setAttribute('http.response.status_code', result.statusCode);
          return result;
        },
        {
          attributes: {
            'workspace.id': delivery.workspace_id,
            'webhook.endpoint.id': delivery.endpoint_id,
            'messaging.message.id': delivery.event_id,
          },
        },
      ),
    );
  }

  private readonly gone = new Set<string>();

  // Results wait a moment for others, so a busy worker writes them in batches.
  private scheduleFlush(): Promise<void> {
    this.flushing ??= new Promise<void>((resolve) => setTimeout(resolve, 20)).then(() => this.flush());
    return this.flushing;
  }

  private async flush(): Promise<void> {
    this.flushing = undefined;
    const batch = this.results.splice(0);
    const gone = [...this.gone];
    this.gone.clear();
    if (batch.length === 0 && gone.length === 0) return;
    try {
      const disabled = await withTransaction(this.options.pool, async (client) => {
        await this.options.deliveries.record(client, batch);
        for (const endpointId of gone)
          await this.options.endpoints.disable(client, endpointId, 'the receiver answered 410 Gone');
        return this.options.endpoints.noteOutcomes(
          client,
          batch.map((r) => ({
            workspaceId: r.delivery.workspace_id,
            endpointId: r.delivery.endpoint_id,
            success: r.status === 'delivered',
          })),
          this.options.disableAfterMs,
        );
      });
      for (const endpointId of gone) {
        endpointsDisabled.add(1, { reason: 'gone' });
        this.options.logger.warn(
          { endpoint_id: endpointId },
          'webhook endpoint disabled: the receiver answered 410 Gone',
        );
      }
      for (const endpoint of disabled) {
        endpointsDisabled.add(1, { reason: 'failing' });
        this.options.logger.warn(
          { endpoint_id: endpoint.id, workspace_id: endpoint.workspace_id },
          'webhook endpoint disabled: no successful delivery within WEBHOOK_DISABLE_AFTER_HOURS',
        );
      }
    } catch (error) {
      // The leases expire and the deliveries are attempted again: at least once, never lost.
      this.options.logger.error({ err: error, attempts: batch.length }, 'recording webhook attempts failed');
    }
  }
}
