import {
  type ConsumerName,
  type EventData,
  type EventEnvelope,
  type EventType,
  type eventConsumers,
  eventLanes,
  laneWord,
  parseEventData,
  type WireEvent,
} from '@inbox/contracts';
import type { Bus, ConsumeOptions, Delivery } from './bus.js';
import { InFlight } from './in-flight.js';
import { UnreadableEvent } from './unreadable-event.js';

/** A durable consumer's settings; its filter follows from the event types it takes. */
export type SubscriptionOptions = Omit<ConsumeOptions, 'filter'> & {
  /**
   * For types that travel in lanes: how many handlers run at once over all the lanes in this process
   * (`concurrency` is each lane's). Each lane keeps its own share, so a busy lane never takes the rest,
   * while the lanes together ask no more of the database pool than one durable did.
   */
  concurrencyAcrossLanes?: number;
};

type WireHandler = (event: WireEvent, delivery: Delivery) => Promise<void>;

/** A handler that runs only while fewer than `limit` of its calls run. */
function sharing(handler: WireHandler, limit: number | undefined): WireHandler {
  if (limit === undefined) return handler;
  const slots = new InFlight();
  return async (event, delivery) => {
    await slots.acquire(limit);
    try {
      await handler(event, delivery);
    } finally {
      slots.release();
    }
  };
}

/** Consumes the types' durable, or each of their lanes' durables, with one handler shared by all. */
async function subscribe(
  bus: Bus,
  { concurrencyAcrossLanes, ...options }: SubscriptionOptions,
  types: readonly EventType[],
  handler: WireHandler,
): Promise<void> {
  const shared = sharing(handler, concurrencyAcrossLanes);
  await Promise.all(
    subscriptionsFor(options.durable, types).map((lane) => bus.consume({ ...options, ...lane }, shared)),
  );
}

/** One handler per event type taken, each given the event with its data parsed by the catalogue. */
export type EventHandlers<T extends EventType> = {
  [K in T]: (event: EventEnvelope<K>, delivery: Delivery) => Promise<void>;
};

/** The handlers a consumer of the catalogue (eventConsumers) must give: one for each type it takes. */
export type HandlersOf<N extends ConsumerName> = EventHandlers<(typeof eventConsumers)[N][number]>;

/** An event of one of the types taken, its data left exactly as it came (never parsed, never re-ordered). */
export type ForwardedEvent<T extends EventType> = {
  [K in T]: Omit<WireEvent, 'type'> & { type: K };
}[T];

/**
 * The one NATS filter that lets every given type through: the type itself when there is one, else the
 * tokens they all share followed by `>` (nats-server 2.9 takes one filter subject per consumer). What
 * else it lets through, the subscription acknowledges unread.
 */
export function filterFor(types: readonly EventType[]): string {
  const distinct = [...new Set(types)];
  if (distinct.length === 0) throw new Error('a subscription takes at least one event type');
  if (distinct.length === 1) return distinct[0]!;
  const tokens = distinct.map((type) => type.split('.'));
  // `>` stands for one token or more, so the shared part stops before the last token of the shortest.
  const reach = Math.min(...tokens.map((t) => t.length)) - 1;
  const shared: string[] = [];
  for (let i = 0; i < reach && tokens.every((t) => t[i] === tokens[0]![i]); i++) shared.push(tokens[0]![i]!);
  return [...shared, '>'].join('.');
}

/** One durable consumer's name and filter, as the broker knows it. */
export interface DurableSubscription {
  durable: string;
  filter: string;
  /** The filter lane 0 had before its types took lanes, when that one would take every lane's events. */
  formerFilter?: string;
  /** Where a lane starts when it is first created, when lane 0 read its events until then. */
  startBackMs?: number;
}

/**
 * How far back a lane starts that takes over from a durable that read every lane: the durable read its
 * events until the lane's first start, give or take the replicas' start and the broker's clock.
 */
const takeOverBackMs = 15 * 60_000;

/**
 * What a consumer of these types subscribes: its durable with the types' filter, or, for types that travel
 * in lanes (eventLanes), one durable per lane, each filtering its lane: `messaging` for lane 0, then
 * `messaging-lane1` on `lane1.inbound.>` and so on. Lane 0's filter must not take the other lanes' events:
 * `>` (types that share no first word, as the webhook events) would, so lane 0 takes as many `*` as the
 * types have words (`*.*`), which a lane's subjects, a word longer, never match.
 */
export function subscriptionsFor(durable: string, types: readonly EventType[]): DurableSubscription[] {
  const filter = filterFor(types);
  const laned = types.filter((type) => eventLanes.types.includes(type));
  if (laned.length === 0) return [{ durable, filter }];
  if (laned.length !== types.length) {
    throw new Error(`${durable} takes events that travel in lanes with events that do not: subscribe apart`);
  }
  // Lane 0's filter must leave the other lanes out; one that took them all until now read their events.
  const tookEveryLane = filter.startsWith('>');
  return Array.from({ length: eventLanes.count }, (_, lane) => {
    if (lane > 0)
      return {
        durable: `${durable}-lane${lane}`,
        filter: `${laneWord(lane)}${filter}`,
        ...(tookEveryLane ? { startBackMs: takeOverBackMs } : {}),
      };
    if (!tookEveryLane) return { durable, filter };
    const words = new Set(types.map((type) => type.split('.').length));
    if (words.size !== 1)
      throw new Error(`${durable}'s lane 0 has no filter that leaves the other lanes out`);
    return {
      durable,
      filter: Array.from({ length: [...words][0]! }, () => '*').join('.'),
      formerFilter: filter,
    };
  });
}

const takes = <T extends EventType>(types: readonly T[], type: string): type is T =>
  (types as readonly string[]).includes(type);

/**
 * Subscribes a durable consumer to the handlers' event types (a durable per lane for types that travel in
 * lanes, each with the options' concurrency). The data is parsed here, the one place a consumer reads it:
 * data of another shape is dead-lettered at once (UnreadableEvent), never retried.
 */
export function consumeEvents<T extends EventType>(
  bus: Bus,
  options: SubscriptionOptions,
  handlers: EventHandlers<T>,
): Promise<void> {
  const types = Object.keys(handlers) as T[];
  const handle: WireHandler = async (event, delivery) => {
    if (!takes(types, event.type)) return;
    const handler = handlers[event.type] as (event: EventEnvelope<T>, delivery: Delivery) => Promise<void>;
    let data: EventData<T>;
    try {
      data = parseEventData(event.type, event.data);
    } catch (error) {
      throw new UnreadableEvent(event.type, error);
    }
    await handler({ ...event, type: event.type, data } as EventEnvelope<T>, delivery);
  };
  return subscribe(bus, options, types, handle);
}

/**
 * Subscribes a durable consumer that passes the events of the given types on without reading their data
 * (the webhook dispatcher: what it sends is the data's bytes as they came, which parsing would re-order).
 */
export function forwardEvents<T extends EventType>(
  bus: Bus,
  options: SubscriptionOptions,
  types: readonly T[],
  handler: (event: ForwardedEvent<T>, delivery: Delivery) => Promise<void>,
): Promise<void> {
  const forward: WireHandler = async (event, delivery) => {
    if (takes(types, event.type)) await handler(event as ForwardedEvent<T>, delivery);
  };
  return subscribe(bus, options, types, forward);
}
