import { fileURLToPath } from 'node:url';
import { forwardEvents, subscriptionsFor } from '@inbox/bus';
import { type ConsumerName, eventConsumers } from '@inbox/contracts';
import { AddressPolicy, guardedAgent } from '@inbox/outbound-http';
import { SecretBox, type ServiceDefinition } from '@inbox/service-kit';
import { meter } from '@inbox/telemetry';
import { defaultPerEndpointConcurrency, defaultRetrySchedule } from './config.js';
import { DeliveryPruner } from './delivery-pruner.js';
import { DeliveryWorker } from './delivery-worker.js';
import { parseSchedule } from './domain/retry-policy.js';
import { webhooks } from './handlers/endpoints.js';
import { scheduleEvent } from './handlers/schedule-event.js';
import { type BodyCopies, DeliveryStore } from './store/deliveries.js';
import { EndpointStore } from './store/endpoints.js';
import { ScheduleBatches, scheduleBatchSize } from './store/schedule-batches.js';

export interface DispatcherOptions {
  encryptionKey: string;
  /** OUTBOUND_ALLOWED_CIDRS: private ranges webhooks may reach. */
  allowedCidrs?: string;
  timeoutMs?: number;
  /** WEBHOOK_RETRY_SCHEDULE: seconds between attempts. */
  retrySchedule?: string;
  disableAfterHours?: number;
  /** WEBHOOK_SECRET_GRACE_HOURS: how long a rotated-out secret keeps signing. */
  secretGraceHours?: number;
  concurrency?: number;
  perEndpointConcurrency?: number;
  /** WEBHOOK_RETENTION_DAYS: how long finished deliveries and their attempts are kept. */
  retentionDays?: number;
  /** WEBHOOK_BODY_COPIES: only the event keeps its body (the default), or each delivery a copy too. */
  bodyCopies?: BodyCopies;
  /** How often finished deliveries past their retention are deleted. */
  pruneIntervalMs?: number;
  /** How often idle workers look for due deliveries. */
  pollMs?: number;
  /** How long the delivery loop may go without completing an iteration before the service is not ready. */
  stalledAfterMs?: number;
  /** How long an ordered endpoint's delivery waits for an unscheduled earlier event of its conversation. */
  orderingGapWaitMs?: number;
}

const durable = 'webhook-dispatcher' satisfies ConsumerName;

export function dispatcherService(options: DispatcherOptions): ServiceDefinition {
  return {
    name: 'webhook-dispatcher',
    schema: 'dispatcher',
    migrationsDir: fileURLToPath(new URL('../migrations', import.meta.url)),
    create: ({ pool, bus, logger }) => {
      const policy = AddressPolicy.fromSetting(options.allowedCidrs);
      const timeoutMs = options.timeoutMs ?? 15_000;
      const perEndpointConcurrency = options.perEndpointConcurrency ?? defaultPerEndpointConcurrency;
      // No cap per origin: endpoints of many workspaces may share a receiver's host, and a cap there would
      // make one slow endpoint's attempts hold the connections the others wait for. The lease bounds
      // each endpoint's attempts in flight, and the worker's concurrency all of them.
      const agent = guardedAgent(policy, timeoutMs);
      const endpoints = new EndpointStore(pool, new SecretBox(options.encryptionKey));
      const deliveries = new DeliveryStore(pool, options.bodyCopies, options.orderingGapWaitMs);
      const batches = new ScheduleBatches(deliveries);
      const lanes = subscriptionsFor(durable, eventConsumers[durable]);
      const worker = new DeliveryWorker({
        pool,
        deliveries,
        endpoints,
        agent,
        policy,
        logger,
        timeoutMs,
        retry: {
          scheduleSeconds: parseSchedule(options.retrySchedule ?? defaultRetrySchedule),
        },
        concurrency: options.concurrency ?? 128,
        perEndpointConcurrency,
        disableAfterMs: (options.disableAfterHours ?? 120) * 3_600_000,
        pollMs: options.pollMs,
        stalledAfterMs: options.stalledAfterMs,
        orderingGapWaitMs: options.orderingGapWaitMs,
        // Every lane's durable: a backlog in any lane is the dispatcher's.
        consumerLag: async () => {
          const pending = await Promise.all(lanes.map((lane) => bus.pending(lane.durable)));
          return pending.reduce((sum, n) => sum + n, 0);
        },
      });
      const pruner = new DeliveryPruner({
        deliveries,
        logger,
        retentionDays: options.retentionDays ?? 30,
        intervalMs: options.pruneIntervalMs,
      });
      const deps = {
        endpoints,
        deliveries,
        policy,
        logger,
        wake: () => worker.wake(),
        secretGraceHours: options.secretGraceHours ?? 24,
      };
      let pendingRetries = 0;
      const gauge = meter('webhook-dispatcher').createObservableGauge('webhook.retries.pending', {
        description: 'Deliveries waiting for a retry',
      });
      gauge.addCallback((result) => result.observe(pendingRetries));
      const refreshGauge = setInterval(() => {
        deliveries.pendingRetries().then(
          (n) => (pendingRetries = n),
          () => undefined,
        );
      }, 15_000);
      refreshGauge.unref();
      return {
        // A dispatcher whose delivery loop has ended or stalled delivers nothing, whatever else answers.
        readiness: { deliveryWorker: () => worker.isLive() },
        start: async () => {
          await bus.handle('cmd.dispatcher.create-webhook', (command) => webhooks.create(deps, command));
          await bus.handle('cmd.dispatcher.list-webhooks', (command) => webhooks.list(deps, command));
          await bus.handle('cmd.dispatcher.get-webhook', (command) => webhooks.get(deps, command));
          await bus.handle('cmd.dispatcher.update-webhook', (command) => webhooks.update(deps, command));
          await bus.handle('cmd.dispatcher.delete-webhook', (command) => webhooks.remove(deps, command));
          await bus.handle('cmd.dispatcher.rotate-secret', (command) => webhooks.rotateSecret(deps, command));
          await bus.handle('cmd.dispatcher.list-deliveries', (command) =>
            webhooks.listDeliveries(deps, command),
          );
          await bus.handle('cmd.dispatcher.get-delivery', (command) => webhooks.getDelivery(deps, command));
          await bus.handle('cmd.dispatcher.resend-delivery', (command) => webhooks.resend(deps, command));
          await bus.handle('cmd.dispatcher.send-test', (command) => webhooks.sendTest(deps, command));
          await bus.handle('cmd.dispatcher.replay-failed', (command) => webhooks.replayFailed(deps, command));
          // Scheduling is quick (one insert, shared by the events that arrive while the previous one
          // runs); the attempts run in the worker, so no receiver can hold the stream back. It takes
          // milliseconds, so a short ack wait lets another replica take over quickly after a crash;
          // heartbeats keep a slow one from being redelivered meanwhile. As many events are in hand as one
          // statement takes: with 32, a flood's statements held 10-16 events on average and RabbitMQ
          // scheduled slower than the worker delivered (bench/RESULTS.md, 2026-11-26, sixth session).
          // The events travel in lanes by workspace (eventLanes), a durable each: a workspace's flood
          // (external send has no rate limit, and each event is a delivery per endpoint, up to fifty)
          // holds its lane's statement's worth, and the other lanes' events take the second one in hand.
          await forwardEvents(
            bus,
            {
              durable,
              concurrency: scheduleBatchSize,
              concurrencyAcrossLanes: 2 * scheduleBatchSize,
              ackWaitMs: 10_000,
            },
            eventConsumers[durable],
            async (event) => {
              if ((await scheduleEvent(batches, event)) > 0) worker.wake();
            },
          );
          worker.start();
          pruner.start();
        },
        stop: async () => {
          clearInterval(refreshGauge);
          await pruner.stop();
          await worker.stop();
          await agent.close();
        },
      };
    },
  };
}
