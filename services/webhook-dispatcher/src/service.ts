import { fileURLToPath } from 'node:url';
import { SecretBox, type ServiceDefinition } from '@inbox/service-kit';
import { AddressPolicy } from './domain/address-policy.js';
import { guardedAgent } from './domain/guarded-http.js';
import { deliverEvent } from './handlers/deliver-event.js';
import { createWebhook, listDeliveries } from './handlers/endpoints.js';
import { DeliveryStore } from './store/deliveries.js';
import { EndpointStore } from './store/endpoints.js';

export interface DispatcherOptions {
  encryptionKey: string;
  /** WEBHOOK_ALLOWED_CIDRS: private ranges webhooks may reach. */
  allowedCidrs?: string;
  timeoutMs?: number;
}

export function dispatcherService(options: DispatcherOptions): ServiceDefinition {
  return {
    name: 'webhook-dispatcher',
    schema: 'dispatcher',
    migrationsDir: fileURLToPath(new URL('../migrations', import.meta.url)),
    create: ({ pool, bus, logger }) => {
      const policy = AddressPolicy.fromSetting(options.allowedCidrs);
      const timeoutMs = options.timeoutMs ?? 15_000;
      const agent = guardedAgent(policy, timeoutMs);
      const endpoints = new EndpointStore(pool, new SecretBox(options.encryptionKey));
      const deliveries = new DeliveryStore(pool);
      return {
        start: async () => {
          await bus.handle('cmd.dispatcher.create-webhook', (command) =>
            createWebhook({ endpoints, policy }, command),
          );
          await bus.handle('cmd.dispatcher.list-deliveries', (command) =>
            listDeliveries({ endpoints, deliveries }, command),
          );
          await bus.consume({ durable: 'webhook-dispatcher', filter: '>', concurrency: 8 }, (event) =>
            deliverEvent({ endpoints, deliveries, agent, policy, logger, timeoutMs }, event),
          );
        },
        stop: () => agent.close(),
      };
    },
  };
}
