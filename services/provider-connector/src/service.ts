import { fileURLToPath } from 'node:url';
import { OutboxRelay } from '@inbox/db';
import { SecretBox, type ServiceDefinition } from '@inbox/service-kit';
import { inboundRoutes } from './handlers/inbound.js';
import { createIntegration, resolveIntegration, updateIntegration } from './handlers/integrations.js';
import { sendText } from './handlers/send-text.js';
import { IntegrationStore } from './store/integrations.js';

export interface ConnectorOptions {
  encryptionKey: string;
  /** Where providers reach this connector: inbound URLs registered with them start with it. */
  publicConnectorUrl: string;
  providerTimeoutMs?: number;
}

export function connectorService(options: ConnectorOptions): ServiceDefinition {
  return {
    name: 'provider-connector',
    schema: 'connector',
    migrationsDir: fileURLToPath(new URL('../migrations', import.meta.url)),
    outbox: true,
    create: ({ pool, bus, logger }) => {
      const store = new IntegrationStore(pool, new SecretBox(options.encryptionKey));
      const providerTimeoutMs = options.providerTimeoutMs ?? 15_000;
      const sendDeps = { store, logger, providerTimeoutMs };
      const createDeps = { store, publicConnectorUrl: options.publicConnectorUrl, providerTimeoutMs };
      const relay = new OutboxRelay({
        pool,
        bus,
        schema: 'connector',
        onError: (error) => logger.error({ err: error }, 'outbox relay pass failed'),
      });
      return {
        // Inbound routes read the raw body themselves: signatures are over the exact bytes.
        parseJson: false,
        routes: (app) => {
          app.use(inboundRoutes({ pool, store, relay, logger }));
        },
        start: async () => {
          await bus.handle('cmd.connector.create-integration', (command) =>
            createIntegration(createDeps, command),
          );
          await bus.handle('cmd.connector.resolve-integration', (command) =>
            resolveIntegration(store, command),
          );
          await bus.handle('cmd.connector.send-text', (command) => sendText(sendDeps, command));
          await bus.handle('cmd.connector.update-integration', (command) =>
            updateIntegration(store, command),
          );
          relay.start();
        },
        stop: () => relay.stop(),
      };
    },
  };
}
