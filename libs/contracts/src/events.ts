import { z } from 'zod';
import { eventTypes } from './event-types.js';
import {
  CallbackKeptEvent,
  InboundMessageEvent,
  InboundStatusEvent,
  InboundWatermarkEvent,
  LeadMovedEvent,
} from './internal-events.js';
import { ConversationAssigned, ConversationResolved, MessageReceived, MessageSent } from './public-events.js';

type EventName = (typeof eventTypes)[keyof typeof eventTypes];
// Every event's data names its workspace: the envelope repeats it, so writers give it once.
type EventSchema = z.ZodType<{ workspace_id: string }>;

/** The webhook events, in the spec's order (the admin API lists them so); receivers get their data as is. */
const publicEvents = {
  [eventTypes.messageReceived]: MessageReceived,
  [eventTypes.messageSent]: MessageSent,
  [eventTypes.conversationAssigned]: ConversationAssigned,
  [eventTypes.conversationResolved]: ConversationResolved,
} as const satisfies Partial<Record<EventName, EventSchema>>;

/** The events only services read. */
const internalEvents = {
  [eventTypes.inboundMessage]: InboundMessageEvent,
  [eventTypes.inboundStatus]: InboundStatusEvent,
  [eventTypes.inboundWatermark]: InboundWatermarkEvent,
  [eventTypes.leadMoved]: LeadMovedEvent,
  [eventTypes.callbackKept]: CallbackKeptEvent,
} as const satisfies Partial<Record<EventName, EventSchema>>;

/**
 * Every event on the bus, public and internal, with the schema of its data: writers are bound to it
 * (`writeEvent` in @inbox/db) and consumers get data it parsed (`consumeEvents` in @inbox/bus).
 */
export const eventCatalogue = { ...publicEvents, ...internalEvents } satisfies Record<EventName, EventSchema>;
export type EventType = keyof typeof eventCatalogue;
export type PublicEventType = keyof typeof publicEvents;
export type EventData<T extends EventType> = z.infer<(typeof eventCatalogue)[T]>;
export const publicEventTypes = Object.keys(publicEvents) as PublicEventType[];

export function isEventType(type: string): type is EventType {
  return Object.hasOwn(eventCatalogue, type);
}

/** The data as its type's schema reads it; throws (a ZodError) on data of another shape. */
export function parseEventData<T extends EventType>(type: T, data: unknown): EventData<T> {
  return eventCatalogue[type].parse(data) as EventData<T>;
}

/**
 * An event as the outbox stores it and the bus carries it. The transport takes any type (its own tests,
 * an event from a newer version); the catalogue is what gives a type its meaning.
 */
export const WireEvent = z.object({
  id: z.uuid(),
  type: z.string(),
  workspace_id: z.uuid(),
  occurred_at: z.iso.datetime(),
  data: z.unknown(),
  /**
   * The event's place among its conversation's events: `seq` counts 1, 2, 3… per `key`, given by the
   * writer in the transaction that commits the event, so it is the commit order. No broker keeps order
   * across redeliveries and competing consumers; this does, and the dispatcher delivers by it.
   */
  ordering: z.object({ key: z.string().min(1).max(200), seq: z.number().int().positive() }).optional(),
});
export type WireEvent = z.infer<typeof WireEvent>;

/** An event of the catalogue with its data typed by its type; over several types, their union. */
export type EventEnvelope<T extends EventType = EventType> = {
  [K in T]: Omit<WireEvent, 'type' | 'data'> & { type: K; data: EventData<K> };
}[T];

/**
 * The key an event is ordered by: its conversation, for the public events (each carries
 * `conversation_id`, and messaging, which owns conversations, is the only writer of them).
 */
export function orderingKeyOf(type: EventType, data: unknown): string | undefined {
  if (!Object.hasOwn(publicEvents, type)) return undefined;
  const conversationId = (data as { conversation_id?: unknown }).conversation_id;
  return typeof conversationId === 'string' ? conversationId : undefined;
}

/** The subject an event type (or a pattern over types) is published on. */
export const eventSubject = (type: string) => `evt.${type}`;
