import { fileURLToPath } from 'node:url';
import { OutboxRelay } from '@inbox/db';
import type { ServiceDefinition } from '@inbox/service-kit';
import { sendMessage } from './handlers/send-message.js';

export function messagingService(): ServiceDefinition {
  return {
    name: 'messaging',
    schema: 'messaging',
    migrationsDir: fileURLToPath(new URL('../migrations', import.meta.url)),
    outbox: true,
    create: ({ pool, bus, logger }) => {
      const relay = new OutboxRelay({
        pool,
        bus,
        schema: 'messaging',
        onError: (error) => logger.error({ err: error }, 'outbox relay pass failed'),
      });
      return {
        start: async () => {
          await bus.handle('cmd.messaging.send-message', (command) =>
            sendMessage({ pool, bus, relay }, command),
          );
          relay.start();
        },
        stop: () => relay.stop(),
      };
    },
  };
}
