import { fileURLToPath } from 'node:url';
import { SecretBox, type ServiceDefinition } from '@inbox/service-kit';
import { createIntegration, resolveIntegration, updateIntegration } from './handlers/integrations.js';
import { sendText } from './handlers/send-text.js';
import { IntegrationStore } from './store/integrations.js';

export interface ConnectorOptions {
  encryptionKey: string;
  providerTimeoutMs?: number;
}

export function connectorService(options: ConnectorOptions): ServiceDefinition {
  return {
    name: 'provider-connector',
    schema: 'connector',
    migrationsDir: fileURLToPath(new URL('../migrations', import.meta.url)),
    create: ({ pool, bus, logger }) => {
      const store = new IntegrationStore(pool, new SecretBox(options.encryptionKey));
      const sendDeps = { store, logger, providerTimeoutMs: options.providerTimeoutMs ?? 15_000 };
      return {
        bodyLimit: '1mb',
        start: async () => {
          await bus.handle('cmd.connector.create-integration', (command) =>
            createIntegration(store, command),
          );
          await bus.handle('cmd.connector.resolve-integration', (command) =>
            resolveIntegration(store, command),
          );
          await bus.handle('cmd.connector.send-text', (command) => sendText(sendDeps, command));
          await bus.handle('cmd.connector.update-integration', (command) =>
            updateIntegration(store, command),
          );
        },
        stop: async () => undefined,
      };
    },
  };
}
