import { eventTypes } from './event-types.js';
import { type EventType, publicEventTypes } from './events.js';

/**
 * Every durable consumer of the platform and the events it takes, declared once. Services subscribe by
 * these names; a broker that keeps an event only for consumers that exist when it is published
 * (RabbitMQ routes it to the queues bound at that moment) has every process declare all of them when it
 * connects, so an event published before its consumer's first start is kept, not dropped.
 */
export const eventConsumers = {
  /** Messaging takes what the connector announced: a contact's message, a provider's word on ours. */
  messaging: [eventTypes.inboundMessage, eventTypes.inboundStatus, eventTypes.inboundWatermark],
  /** Messaging notes lead moves on the conversation they name. */
  'messaging-leads': [eventTypes.leadMoved],
  /** The connector puts the callbacks it kept on the bus, while Postgres refused them, in its inbox. */
  'connector-kept': [eventTypes.callbackKept],
  /** The webhook dispatcher schedules every public event. */
  'webhook-dispatcher': publicEventTypes,
} as const satisfies Record<string, readonly EventType[]>;

export type ConsumerName = keyof typeof eventConsumers;
