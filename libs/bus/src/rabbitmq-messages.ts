import { WireEvent } from '@inbox/contracts';
import type { HeaderCarrier } from '@inbox/telemetry';
import type { Message } from 'amqplib';
import type { DeadLetter } from './bus.js';
import { deliveryLimit } from './rabbitmq-topology.js';

export type Headers = Record<string, unknown>;

/** Deliveries this event had before the copy that carries the header (a retry or a dead letter). */
export const attemptsHeader = 'x-inbox-attempts';
/** Why a handler gave the event up, on a dead letter the transport wrote. */
export const errorHeader = 'x-inbox-error';
/**
 * When the caller of a command gives up, in milliseconds since the epoch by the caller's clock. The
 * broker's per-message expiration counts from when the message was enqueued, later than the caller's
 * timer started, so a command could still be taken up to one publish delay after its caller gave up.
 */
export const deadlineHeader = 'x-inbox-deadline';

/** Whether the command's caller has given up by now (a command without the header never expires here). */
export function callerGaveUp(message: Message, now = Date.now()): boolean {
  const deadline = headersOf(message)[deadlineHeader];
  return typeof deadline === 'number' && now >= deadline;
}

export const encode = (value: unknown): Buffer => Buffer.from(JSON.stringify(value));
export const decode = (content: Buffer): unknown => JSON.parse(content.toString('utf8'));

export function headerCarrier(headers: Headers): HeaderCarrier {
  return {
    get: (name) => {
      const value = headers[name];
      if (typeof value === 'string') return value;
      return Buffer.isBuffer(value) ? value.toString('utf8') : undefined;
    },
    set: (name, value) => {
      headers[name] = value;
    },
    keys: () => Object.keys(headers),
  };
}

const headersOf = (message: Message): Headers => (message.properties.headers ?? {}) as Headers;
const count = (value: unknown): number => (typeof value === 'number' && value > 0 ? value : 0);

/**
 * The delivery's attempt, counted across every copy of the event: the deliveries before this copy (the
 * retries the transport published) plus the times the broker handed this copy out before and got it
 * back unanswered (`x-delivery-count`, kept by quorum queues: a consumer that crashed or was cut off).
 */
export function attemptOf(message: Message): number {
  const headers = headersOf(message);
  return count(headers[attemptsHeader]) + count(headers['x-delivery-count']) + 1;
}

/**
 * The headers a new copy of the message carries: the producer's own (trace context) without the broker's
 * bookkeeping (`x-death`, `x-delivery-count`, …) or ours, which the copy sets afresh.
 */
export function carriedHeaders(message: Message, ours: Headers): Headers {
  const carried = Object.fromEntries(
    Object.entries(headersOf(message)).filter(([name]) => !name.startsWith('x-')),
  );
  return { ...carried, ...ours };
}

/** A message's content as an event, or undefined when it is none. */
export function readableEvent(content: Buffer): WireEvent | undefined {
  try {
    return WireEvent.parse(JSON.parse(content.toString('utf8')));
  } catch {
    return undefined;
  }
}

function eventOf(content: Buffer): WireEvent {
  // Kept as it came, as the NATS transport keeps what it could not read.
  return readableEvent(content) ?? ({ raw: content.toString('utf8') } as unknown as WireEvent);
}

/**
 * A message of a dead-letter queue as the bus reports it. The transport's own letters carry the error and
 * the attempts; the broker's (the delivery limit) carry only `x-death`, and the copy was handed out
 * `deliveryLimit + 1` times.
 */
export function letterFrom(durable: string, message: Message): DeadLetter {
  const headers = headersOf(message);
  const event = eventOf(message.content);
  if (typeof headers[errorHeader] === 'string') {
    return { durable, event, error: headers[errorHeader], attempts: count(headers[attemptsHeader]) };
  }
  const deaths = Array.isArray(headers['x-death']) ? (headers['x-death'] as Array<{ reason?: unknown }>) : [];
  const reason = deaths.some((death) => death.reason === 'delivery_limit')
    ? `delivered ${deliveryLimit + 1} times without an answer: a consumer crashed or was cut off while handling it`
    : `dead-lettered by the broker (${String(headers['x-first-death-reason'] ?? 'unknown reason')})`;
  return { durable, event, error: reason, attempts: count(headers[attemptsHeader]) + deliveryLimit + 1 };
}
