import type {
  CommandRequest,
  CommandResult,
  CommandSubject,
  NoticePayload,
  NoticeSubject,
  WireEvent,
} from '@inbox/contracts';
import { outageWaits } from './metrics.js';
import type { OutageWaiting } from './outage.js';

export interface RequestOptions {
  /** The longest the caller waits for the answer; the command's own timeout when absent. */
  timeoutMs?: number;
  /**
   * How long the caller waits without a sign of life from the handler (sent every second while it
   * works) before it takes the handler for dead and answers 504; `commandLiveness.silenceMs` when absent.
   */
  silenceMs?: number;
}

export interface ConsumeOptions {
  /** The durable consumer's name: one per consuming service, shared by all its replicas. */
  durable: string;
  /** Event types to receive, as a NATS-style pattern over the type: `message.sent`, `message.*`, `>`. */
  filter: string;
  /**
   * The filter the durable had before, when it changed: a broker that keeps every binding a queue was
   * given (RabbitMQ) drops that one, or the queue would go on taking what the old filter let through.
   */
  formerFilter?: string;
  /**
   * A durable created now starts this many milliseconds back, not at the oldest event the stream keeps
   * (a week on NATS): for one that takes over events another durable has read until now, which would
   * otherwise read the whole week again. Ignored where a durable keeps only what came after its queue
   * was declared (RabbitMQ) and for a durable that exists.
   */
  startBackMs?: number;
  /** Deliveries before a failing event goes to the dead-letter subject. */
  maxDeliver?: number;
  /** Delay before each redelivery after a failure; the last value repeats. */
  redeliveryDelaysMs?: number[];
  /** How many events one replica handles at once. Above 1, events may finish out of order. */
  concurrency?: number;
  /** How long a delivery may stay unacknowledged before the server gives it to another replica. */
  ackWaitMs?: number;
  /**
   * How long a delivery whose handler fails with an outage (outage.ts: its database or a service it asks
   * cannot be reached) is tried again in place before it counts as a failed delivery.
   */
  outageWaitMs?: number;
  /** The pauses between those tries; the last repeats. */
  outagePausesMs?: number[];
}

export interface Delivery {
  /** 1 on the first delivery, counting up on every redelivery. */
  attempt: number;
}

/** A handler of the raw stream: any type, data unread. Services take events through consumeEvents. */
export type EventHandler = (event: WireEvent, delivery: Delivery) => Promise<void>;
export type CommandHandler<S extends CommandSubject> = (
  payload: import('@inbox/contracts').CommandPayload<S>,
) => Promise<CommandResult<S>>;

export interface DeadLetter {
  durable: string;
  event: WireEvent;
  error: string;
  attempts: number;
}

/**
 * The one interface services use to talk: commands (someone waits for the answer) and events (nobody
 * waits). It holds only what every broker gives: no stream positions, no server-side ordering, no
 * de-duplication a handler could lean on (handlers are idempotent by event id). Transports: NATS
 * JetStream or RabbitMQ (picked by connectBus from the URL), in-process for the all-in-one local mode.
 */
export interface Bus {
  /** Sends a command to the owning service and returns its data, or throws the AppError it answered. */
  request<S extends CommandSubject>(
    subject: S,
    payload: CommandRequest<S>,
    options?: RequestOptions,
  ): Promise<CommandResult<S>>;
  /** Answers a command; replicas of a service share the load through the service's queue group. */
  handle<S extends CommandSubject>(subject: S, handler: CommandHandler<S>): Promise<void>;
  /**
   * Publishes an event durably: once this resolves the broker has it. A publish repeated with the same
   * id may be delivered twice (NATS drops it within its window; RabbitMQ does not): handlers de-duplicate.
   */
  publish(event: WireEvent): Promise<void>;
  /**
   * Receives events through a durable consumer with explicit acknowledgement, as they are on the wire.
   * Services subscribe through consumeEvents or forwardEvents, which type this by the event catalogue.
   */
  consume(options: ConsumeOptions, handler: EventHandler): Promise<void>;
  /** Sends a notice to every replica that listens, now; not stored, not retried. */
  notify<S extends NoticeSubject>(subject: S, payload: NoticePayload<S>): Promise<void>;
  /** Listens for a notice on this replica (no queue group: every replica gets each notice). */
  onNotice<S extends NoticeSubject>(subject: S, handler: (payload: NoticePayload<S>) => void): Promise<void>;
  /** Events waiting for a durable consumer, not yet delivered to it (its lag). */
  pending(durable: string): Promise<number>;
  /** Events that exhausted their deliveries for a durable consumer, oldest first. */
  deadLetters(durable: string, limit?: number): Promise<DeadLetter[]>;
  /**
   * Puts up to `limit` of a durable's dead letters back for it, oldest first, each with its deliveries
   * counted afresh, and takes them out of the dead letters; answers how many. For an operator, once what
   * failed them is mended (an outage longer than the consumer waits, a handler bug). A dead letter that
   * is no event (`{ raw }`) stays. On NATS the event is published again to its subject, so another
   * durable whose filter takes its type sees it again too, and ignores it as handled (handlers
   * de-duplicate by event id); RabbitMQ puts it in the durable's own queue.
   */
  redrive(durable: string, limit?: number): Promise<number>;
  /** True while the transport is connected. */
  healthy(): boolean;
  /**
   * Stops taking work, lets in-flight handlers finish, runs `beforeClose` (e.g. a last outbox pass that
   * publishes what those handlers wrote), then closes.
   */
  drain(beforeClose?: () => Promise<void>): Promise<void>;
}

export const busDefaults = {
  maxDeliver: 5,
  redeliveryDelaysMs: [1_000, 5_000, 30_000, 120_000],
  ackWaitMs: 30_000,
  // Under RabbitMQ's consumer timeout (30 minutes), past which it closes the channel of a delivery left
  // unacknowledged.
  outageWaitMs: 10 * 60_000,
  outagePausesMs: [1_000, 2_000, 5_000],
} as const;

/** The outage waiting of a consumer's deliveries, from its options and the defaults. */
export function outageWaitingOf(
  options: ConsumeOptions,
  stillWanted: () => boolean,
  onOutage: (error: unknown) => void,
): OutageWaiting {
  return {
    maxWaitMs: options.outageWaitMs ?? busDefaults.outageWaitMs,
    pausesMs: options.outagePausesMs ?? busDefaults.outagePausesMs,
    stillWanted,
    onOutage: (error) => {
      outageWaits.add(1, { durable: options.durable });
      onOutage(error);
    },
  };
}
