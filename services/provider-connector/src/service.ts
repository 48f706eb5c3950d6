import { fileURLToPath } from 'node:url';
import { consumeEvents, type HandlersOf } from '@inbox/bus';
import { maxProviderTimeoutMs } from '@inbox/contracts';
import { AddressPolicy, OutboundGuard } from '@inbox/outbound-http';
import { outboxRelay, SecretBox, type ServiceDefinition, type TrustProxy } from '@inbox/service-kit';
import { bookkeepingPruner } from './bookkeeping-pruner.js';
import { callbackSubscriptionSweep } from './handlers/callback-subscriptions.js';
import { inboundRoutes } from './handlers/inbound.js';
import {
  createIntegration,
  getIntegration,
  listIntegrations,
  resolveIntegration,
  updateIntegration,
} from './handlers/integrations.js';
import { KeptCallbacks, keptOnBusDeliveries } from './handlers/kept-callbacks.js';
import { missedCallbacksSweep } from './handlers/missed-callbacks.js';
import { sendOutcome } from './handlers/send-outcome.js';
import { sendText } from './handlers/send-text.js';
import { templates } from './handlers/templates.js';
import { defaultSweepWorkers, IntegrationSweep } from './integration-sweep.js';
import { visitorDelivery } from './livechat/delivery.js';
import { livechatPruner } from './livechat/retention.js';
import { type LivechatLimits, livechatRoutes } from './livechat/routes.js';
import { LivechatStore } from './livechat/store.js';
import { defaultStreamLimits, LivechatStreams, type StreamLimits } from './livechat/streams.js';
import { IntegrationStore, type StoredIntegration } from './store/integrations.js';
import { replyContexts } from './store/reply-contexts.js';
import { TemplateStore } from './store/templates.js';

export interface ConnectorOptions {
  encryptionKey: string;
  /** Where providers reach this connector: inbound URLs registered with them start with it. */
  publicConnectorUrl: string;
  /** OUTBOUND_ALLOWED_CIDRS: private ranges providers' base URLs may reach. */
  allowedCidrs?: string;
  providerTimeoutMs?: number;
  /** How old a template catalogue may get before it is fetched again. */
  templateRefreshMs?: number;
  /** OUTBOX_RETENTION_HOURS: how long published events stay in the outbox. */
  outboxRetentionHours?: number;
  /** The live chat widget API's budgets; the defaults suit production. */
  livechatLimits?: Partial<LivechatLimits>;
  /** How many widget streams, and how often they look for messages a lost notice did not announce. */
  livechatStreams?: Partial<StreamLimits>;
  /**
   * TRUST_PROXY: which peers may name the client in X-Forwarded-For (service-kit's
   * `defaultTrustedProxies` if unset). Callbacks and the widget API come through the ingress, and the
   * budgets per client address (unknown integrations named, live chat sessions) count under the client.
   */
  trustProxy?: TrustProxy;
}

export function connectorService(options: ConnectorOptions): ServiceDefinition {
  return {
    name: 'provider-connector',
    schema: 'connector',
    migrationsDir: fileURLToPath(new URL('../migrations', import.meta.url)),
    outbox: true,
    create: (service) => {
      const { pool, bus, logger } = service;
      const store = new IntegrationStore(
        pool,
        new SecretBox(options.encryptionKey),
        ({ workspaceId, integrationId }) => {
          bus
            .notify('notice.connector.integration-changed', {
              workspace_id: workspaceId,
              integration_id: integrationId,
            })
            .catch((error: unknown) => logger.warn({ err: error }, 'integration change notice not sent'));
        },
      );
      const providerTimeoutMs = Math.min(
        options.providerTimeoutMs ?? maxProviderTimeoutMs,
        maxProviderTimeoutMs,
      );
      // Every provider call goes through it: base URLs are tenants' input.
      const guard = new OutboundGuard(AddressPolicy.fromSetting(options.allowedCidrs), {
        timeoutMs: providerTimeoutMs,
      });
      const livechat = new LivechatStore(pool);
      const streams = new LivechatStreams(livechat, logger, {
        ...defaultStreamLimits,
        ...options.livechatStreams,
      });
      const sendDeps = {
        store,
        guard,
        logger,
        providerTimeoutMs,
        visitors: (integrationId: string, messageId: string) =>
          visitorDelivery({ livechat, bus, logger }, integrationId, messageId),
        replyContexts: (integrationId: string) => replyContexts(pool, integrationId),
      };
      const templateDeps = {
        integrations: store,
        templates: new TemplateStore(pool),
        guard,
        logger,
        providerTimeoutMs,
      };
      const createDeps = {
        store,
        guard,
        logger,
        publicConnectorUrl: options.publicConnectorUrl,
        providerTimeoutMs,
        // A new official integration fetches its catalogue at once; a failure here is retried later.
        afterCreate: (created: StoredIntegration, workspaceId: string) =>
          templates
            .refresh(templateDeps, created, workspaceId)
            .catch((error: unknown) => logger.warn({ err: error }, 'first template fetch failed')),
      };
      const maxAgeMs = options.templateRefreshMs ?? 30 * 60_000;
      const sweepEveryMs = Math.min(maxAgeMs, 5 * 60_000);
      const sweep = new IntegrationSweep(
        {
          what: 'template refresh',
          claimDue: (busyWorkspaces) =>
            templateDeps.templates.claimDue({ maxAgeMs, retryAfterMs: sweepEveryMs, busyWorkspaces }),
          integrations: store,
          logger,
          workOn: (stored, workspaceId, stopping) =>
            templates.refresh(templateDeps, stored, workspaceId, stopping),
        },
        { everyMs: sweepEveryMs, workers: defaultSweepWorkers },
      );
      const relay = outboxRelay(service, 'connector', options.outboxRetentionHours);
      const fetching = { guard, providerTimeoutMs };
      const kept = new KeptCallbacks({ pool, store, relay, logger, fetching, bus });
      const missedCallbacks = missedCallbacksSweep({ pool, store, logger, fetching, kept });
      const subscriptions = callbackSubscriptionSweep({
        pool,
        store,
        logger,
        guard,
        providerTimeoutMs,
        publicConnectorUrl: options.publicConnectorUrl,
        kept,
      });
      const bookkeeping = bookkeepingPruner(pool, logger);
      const livechatSweeper = livechatPruner(pool, logger);
      return {
        // Inbound routes read the raw body themselves: signatures are over the exact bytes.
        parseJson: false,
        // Callbacks refused at the door (unknown integration, over its budget) are counted and logged,
        // not traced: callback URLs are public, and an anonymous flood must not fill the trace pipeline.
        traceFrom: 'admission',
        trustProxy: options.trustProxy,
        // Ready while Postgres is not: callbacks are then kept on the bus, and an unready connector is one
        // Kubernetes sends no callback to (Z-API's then lost, the others' retries running out).
        readyWithoutDatabase: true,
        routes: (app) => {
          app.use(inboundRoutes({ pool, store, relay, logger, fetching, kept }));
          app.use(
            livechatRoutes({
              pool,
              bus,
              relay,
              logger,
              store,
              livechat,
              streams,
              ...(options.livechatLimits ? { limits: options.livechatLimits } : {}),
            }),
          );
        },
        start: async () => {
          await bus.handle('cmd.connector.create-integration', (command) =>
            createIntegration(createDeps, command),
          );
          await bus.handle('cmd.connector.resolve-integration', (command) =>
            resolveIntegration(store, command),
          );
          await bus.handle('cmd.connector.send-text', (command) => sendText(sendDeps, command));
          await bus.handle('cmd.connector.send-outcome', (command) => sendOutcome(store, command));
          await bus.handle('cmd.connector.get-integration', (command) => getIntegration(store, command));
          await bus.handle('cmd.connector.list-integrations', (command) => listIntegrations(store, command));
          await bus.handle('cmd.connector.update-integration', (command) =>
            updateIntegration(createDeps, command),
          );
          await bus.handle('cmd.connector.prepare-template', (command) =>
            templates.prepare(templateDeps, command),
          );
          await bus.handle('cmd.connector.send-template', (command) => templates.send(templateDeps, command));
          await bus.handle('cmd.connector.refresh-templates', (command) =>
            templates.refreshCommand(templateDeps, command),
          );
          await bus.handle('cmd.connector.list-templates', (command) =>
            templates.list(templateDeps, command),
          );
          await bus.onNotice('notice.connector.integration-changed', ({ workspace_id, integration_id }) =>
            store.forget(workspace_id, integration_id),
          );
          await bus.onNotice('notice.connector.livechat-message', ({ session_id }) =>
            streams.wake(session_id),
          );
          await consumeEvents(
            bus,
            { durable: 'connector-kept', concurrency: 4, maxDeliver: keptOnBusDeliveries },
            {
              'connector.callback.kept': (event) => kept.takeFromBus(event.data),
            } satisfies HandlersOf<'connector-kept'>,
          );
          streams.start();
          relay.start();
          kept.start();
          // Catalogues are refreshed, missed callbacks polled and subscriptions checked in the background;
          // replicas share the work through claims.
          sweep.start();
          missedCallbacks.start();
          subscriptions.start();
          bookkeeping.start();
          livechatSweeper.start();
        },
        stop: async () => {
          await sweep.stop();
          await missedCallbacks.stop();
          await subscriptions.stop();
          await bookkeeping.stop();
          await livechatSweeper.stop();
          streams.stop();
          // Before the relay: what it records goes out through the outbox.
          await kept.stop();
          await relay.stop();
          await guard.close();
        },
      };
    },
  };
}
