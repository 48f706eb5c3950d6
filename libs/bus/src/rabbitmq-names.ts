import { SubjectNames } from './subjects.js';

/**
 * The RabbitMQ names of one installation, under the same optional prefix as the NATS subjects (tests share
 * one server that way). Commands keep their subject as their queue's name, so an operator reads the same
 * names on either broker.
 */
export class RabbitNames {
  private readonly subjects: SubjectNames;

  constructor(prefix = '') {
    this.subjects = new SubjectNames(prefix);
  }

  /** Topic exchange every event is published to, its type as the routing key. */
  get eventsExchange(): string {
    return this.subjects.withPrefix('events');
  }
  /** Direct exchange of dead letters, routed by durable name. */
  get deadLetterExchange(): string {
    return this.subjects.withPrefix('dead-letters');
  }
  /** Direct exchange of notices, routed by notice subject. */
  get noticesExchange(): string {
    return this.subjects.withPrefix('notices');
  }
  /** Shared by a command's handlers (replicas take turns); it exists only while one listens. */
  commandQueue(subject: string): string {
    return this.subjects.command(subject);
  }
  /** A durable's name as a routing key and inside queue names. */
  durableKey(durable: string): string {
    return this.subjects.durable(durable);
  }
  /** The quorum queue a durable consumer's replicas share. */
  durableQueue(durable: string): string {
    return this.subjects.withPrefix(`events.${this.durableKey(durable)}`);
  }
  /** Where a failed event waits `delayMs` before it returns to its durable's queue. */
  retryQueue(durable: string, delayMs: number): string {
    return this.subjects.withPrefix(`retry.${this.durableKey(durable)}.${delayMs}ms`);
  }
  deadLetterQueue(durable: string): string {
    return this.subjects.withPrefix(`dead-letters.${this.durableKey(durable)}`);
  }
  /** A replica's own queue for a notice subject, on one of its connections. */
  noticeQueue(subject: string, suffix: string): string {
    return this.subjects.withPrefix(`${subject}.${suffix}`);
  }
}

/**
 * A NATS pattern over event types as an AMQP topic binding key. `*` is one word in both; NATS's `>` is one
 * word or more, AMQP's `#` zero or more, so `>` becomes `*.#`.
 */
export function bindingKey(filter: string): string {
  return filter
    .split('.')
    .map((word) => (word === '>' ? '*.#' : word))
    .join('.');
}
