import { fileURLToPath } from 'node:url';
import { consumeEvents, type HandlersOf } from '@inbox/bus';
import { eventTypes } from '@inbox/contracts';
import { outboxRelay, type ServiceDefinition } from '@inbox/service-kit';
import { externalSend } from './handlers/external-send.js';
import { applyStatus, applyWatermark, receiveMessage } from './handlers/inbound.js';
import { recordLeadMoved } from './handlers/lead-moved.js';
import { panel } from './handlers/panel.js';
import { sendMessage, sendTemplate } from './handlers/send-message.js';
import { PendingReconciler } from './reconcile-pending.js';
import { Replies } from './store/replies.js';
import { SentMessages } from './store/sent-messages.js';

export interface MessagingOptions {
  /** OUTBOX_RETENTION_HOURS: how long published events stay in the outbox. */
  outboxRetentionHours?: number;
  /** PENDING_RECONCILE_AFTER_MINUTES: when a message left pending is settled from the connector's record. */
  reconcileAfterMinutes?: number;
  /** How often the reconciliation job looks for messages left pending. */
  reconcileIntervalMs?: number;
}

export function messagingService(options: MessagingOptions = {}): ServiceDefinition {
  return {
    name: 'messaging',
    schema: 'messaging',
    migrationsDir: fileURLToPath(new URL('../migrations', import.meta.url)),
    outbox: true,
    create: (service) => {
      const { pool, bus, logger } = service;
      const relay = outboxRelay(service, 'messaging', options.outboxRetentionHours);
      const reconciler = new PendingReconciler({
        pool,
        bus,
        relay,
        logger,
        afterMinutes: options.reconcileAfterMinutes ?? 5,
        intervalMs: options.reconcileIntervalMs,
      });
      return {
        start: async () => {
          const deps = { pool, bus, relay, sent: new SentMessages(pool), replies: new Replies(pool) };
          await bus.handle('cmd.messaging.send-message', (command) => sendMessage(deps, command));
          await bus.handle('cmd.messaging.send-template', (command) => sendTemplate(deps, command));
          await bus.handle('cmd.messaging.external-send', (command) => externalSend(deps, command));
          await bus.handle('cmd.messaging.create-member', (command) => panel.createMember(deps, command));
          await bus.handle('cmd.messaging.create-agent', (command) => panel.createAgent(deps, command));
          await bus.handle('cmd.messaging.list-members', (command) => panel.listMembers(deps, command));
          await bus.handle('cmd.messaging.list-agents', (command) => panel.listAgents(deps, command));
          await bus.handle('cmd.messaging.list-conversations', (command) =>
            panel.listConversations(deps, command),
          );
          await bus.handle('cmd.messaging.list-contacts', (command) => panel.listContacts(deps, command));
          await bus.handle('cmd.messaging.assign', (command) => panel.assign(deps, command));
          await bus.handle('cmd.messaging.resolve', (command) => panel.resolve(deps, command));
          await bus.handle('cmd.messaging.get-conversation', (command) =>
            panel.getConversation(deps, command),
          );
          await bus.handle('cmd.messaging.get-contact', (command) => panel.getContact(deps, command));
          await bus.handle('cmd.messaging.list-failed-messages', (command) =>
            panel.listFailedMessages(deps, command),
          );
          // What the connector announced: a contact's message, or a provider's word on one of ours. These
          // travel in lanes by workspace (eventLanes), each lane a durable of its own with two handlers at a
          // time in each replica: a workspace's burst holds its own lane's two, never the other lanes'. Six
          // at once over all eight lanes leave the pool's other four connections to commands and the relay.
          await consumeEvents(bus, { durable: 'messaging', concurrency: 2, concurrencyAcrossLanes: 6 }, {
            [eventTypes.inboundMessage]: (event) => receiveMessage(deps, event.data),
            [eventTypes.inboundStatus]: (event) => applyStatus(deps, event.data),
            [eventTypes.inboundWatermark]: (event) => applyWatermark(deps, event.data),
          } satisfies HandlersOf<'messaging'>);
          await consumeEvents(bus, { durable: 'messaging-leads' }, {
            [eventTypes.leadMoved]: (event) => recordLeadMoved(pool, event.id, event.data),
          } satisfies HandlersOf<'messaging-leads'>);
          relay.start();
          reconciler.start();
        },
        stop: async () => {
          await reconciler.stop();
          await relay.stop();
        },
      };
    },
  };
}
