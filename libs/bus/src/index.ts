export type {
  Bus,
  CommandHandler,
  ConsumeOptions,
  DeadLetter,
  Delivery,
  EventHandler,
  RequestOptions,
} from './bus.js';
export { busDefaults } from './bus.js';
export { commandLiveness } from './command-liveness.js';
export { type BusConnectOptions, type BusKind, busKindOf, connectBus } from './connect.js';
export {
  consumeEvents,
  type EventHandlers,
  type ForwardedEvent,
  filterFor,
  forwardEvents,
  type HandlersOf,
  type SubscriptionOptions,
  subscriptionsFor,
} from './event-subscription.js';
export { InProcessBus } from './in-process-transport.js';
export { NatsBus, type NatsBusOptions } from './nats-transport.js';
export { isOutage } from './outage.js';
// Types only: the transport itself is loaded by connectBus when a URL names RabbitMQ.
export type { RabbitBus, RabbitBusOptions } from './rabbitmq-transport.js';
export { Slots } from './slots.js';
export { SubjectNames, subjectMatches } from './subjects.js';
export { UnreadableEvent } from './unreadable-event.js';
