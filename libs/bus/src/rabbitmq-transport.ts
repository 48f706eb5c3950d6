import { randomBytes, randomUUID } from 'node:crypto';
import {
  AppError,
  type CommandRequest,
  type CommandResult,
  type CommandSubject,
  commandCatalogue,
  commandTimeoutMs,
  errorMessage,
  eventConsumers,
  eventRoute,
  eventSubject,
  type NoticePayload,
  type NoticeSubject,
  noticeCatalogue,
  WireEvent,
} from '@inbox/contracts';
import { injectContext, withConsumerSpan } from '@inbox/telemetry';
import {
  type Channel,
  type ChannelModel,
  type ConfirmChannel,
  type ConsumeMessage,
  connect,
  type Message,
  type Options,
  type RecoveringChannelModel,
} from 'amqplib';
import {
  type Bus,
  busDefaults,
  type CommandHandler,
  type ConsumeOptions,
  type DeadLetter,
  type EventHandler,
  outageWaitingOf,
  type RequestOptions,
} from './bus.js';
import { AliveSignals, commandLiveness, watchCall } from './command-liveness.js';
import { noResponderError, replyFromError, resultFromReply, timeoutError } from './command-reply.js';
import { subscriptionsFor } from './event-subscription.js';
import { InFlight } from './in-flight.js';
import { lateCommands, notePending, redeliveries, timeCommand } from './metrics.js';
import { OutageUnfinished, type OutageWaiting, waitingOutOutages } from './outage.js';
import { PendingCalls } from './pending-calls.js';
import { ChannelAcks, settle } from './rabbitmq-acks.js';
import {
  attemptOf,
  attemptsHeader,
  callerGaveUp,
  carriedHeaders,
  deadlineHeader,
  decode,
  encode,
  errorHeader,
  type Headers,
  headerCarrier,
  letterFrom,
  readableEvent,
} from './rabbitmq-messages.js';
import { RabbitNames } from './rabbitmq-names.js';
import { declareDurable, declareExchanges } from './rabbitmq-topology.js';
import { coalesceTurnWrites } from './rabbitmq-turn-writes.js';
import { failsEveryDelivery } from './unreadable-event.js';

export interface RabbitBusOptions {
  /** `amqp://user:password@host:5672/vhost` (or `amqps://…`). */
  url: string;
  /** Isolates exchanges and queues, e.g. per test file; empty in production. */
  prefix?: string;
  /** Name shown in the broker's connection list. */
  name?: string;
  onHandlerError?: (error: unknown, context: { subject: string }) => void;
}

/** RabbitMQ's pseudo-queue for direct reply-to: replies go straight to the requesting channel. */
const directReplyTo = 'amq.rabbitmq.reply-to';
const json = 'application/json';
/** The type of a handler's sign of life on a command's reply-to address, beside its one answer. */
const aliveType = 'alive';
// Seconds between heartbeats: a peer gone without closing its socket is noticed within two of them.
const heartbeatSeconds = 10;
const maxErrorLength = 4_000;

/** One connection's channels; all of it is opened again after a reconnect. */
interface Session {
  model: ChannelModel;
  /** Confirmed publishes: events, retries, dead letters. */
  publisher: ConfirmChannel;
  /** Command requests out, their replies in (direct reply-to needs both on one channel), notices out. */
  requester: Channel;
  /** Command and notice consumers, and the replies to commands. */
  responder: Channel;
  /** Consumers to cancel when draining. */
  consumers: Array<{ channel: Channel; tag: string }>;
  /** What was started on this connection (each subscription once). */
  started: Set<Subscription>;
  /** Correlation ids of mandatory publishes the broker returned unrouted, until their confirm arrives. */
  returned: Set<string>;
}

/** Starts a handler, consumer or notice listener on a connection; run again on every reconnect. */
type Subscription = (session: Session) => Promise<void>;

interface PendingCall {
  subject: string;
  heard: () => void;
  settle: (outcome: { reply: unknown } | { error: AppError }) => void;
}

function outgoingHeaders(): Headers {
  const headers: Headers = {};
  injectContext(headerCarrier(headers));
  return headers;
}

function withHeartbeat(url: string): string {
  if (!URL.canParse(url)) return url;
  const parsed = new URL(url);
  if (!parsed.searchParams.has('heartbeat')) parsed.searchParams.set('heartbeat', String(heartbeatSeconds));
  return parsed.toString();
}

const ignore = () => undefined;

/** A copy of an event (a retry, a dead letter) keeps its id and type, persistent, and must reach a queue. */
function copiedProperties(message: Message): Options.Publish {
  return {
    messageId: message.properties.messageId,
    contentType: message.properties.contentType,
    persistent: true,
    mandatory: true,
  };
}

/**
 * The bus over RabbitMQ (amqplib, whose own recovery reconnects with backoff). Commands go to a queue per
 * subject that the handling replicas share, and come back by direct reply-to. Events go to a topic exchange;
 * each durable consumer is a quorum queue its replicas share, with retry queues for delayed redelivery and
 * a dead-letter queue. Notices reach every replica through a queue of its own. Semantics match the NATS
 * transport; the differences are in libs/bus/README.md.
 */
export class RabbitBus implements Bus {
  private readonly names: RabbitNames;
  private readonly inFlight = new InFlight();
  private readonly alive = new AliveSignals();
  private readonly subscriptions: Subscription[] = [];
  private readonly calls = new PendingCalls<PendingCall>();
  private readonly stoppers: Array<() => void> = [];
  private connection: RecoveringChannelModel | undefined;
  private session: Session | undefined;
  private connected = false;
  /** The broker stops reading from publishers under a memory or disk alarm; publishing would hang. */
  private blocked = false;
  private draining = false;
  private closing = false;

  private constructor(private readonly options: RabbitBusOptions) {
    this.names = new RabbitNames(options.prefix);
  }

  static async connect(options: RabbitBusOptions): Promise<RabbitBus> {
    const bus = new RabbitBus(options);
    await bus.open();
    return bus;
  }

  private async open(): Promise<void> {
    const connection = await connect(withHeartbeat(this.options.url), {
      clientProperties: { connection_name: this.options.name ?? 'inbox' },
      recovery: {
        initialDelay: 200,
        maxDelay: 10_000,
        // The first connection fails at once, as the NATS transport's does: a process that cannot reach
        // its broker at start exits, and its supervisor starts it again. Once connected, it never gives up.
        initialMaxRetries: 0,
        maxRetries: Number.POSITIVE_INFINITY,
        waitForConnect: false,
        setup: (model: ChannelModel) => this.attach(model),
      },
    });
    this.connection = connection;
    connection.on('connect', () => {
      this.connected = true;
    });
    connection.on('disconnect', () => {
      this.connected = false;
      this.blocked = false;
    });
    connection.on('blocked', (reason: string) => {
      this.blocked = true;
      this.report(new Error(`the broker blocks publishing: ${reason}`), 'rabbitmq connection');
    });
    connection.on('unblocked', () => {
      this.blocked = false;
    });
    connection.on('connect-failed', (error: Error) => this.report(error, 'rabbitmq connection'));
    connection.on('error', (error: Error) => this.report(error, 'rabbitmq connection'));
    await connection.waitForConnect();
  }

  private report(error: unknown, subject: string): void {
    this.options.onHandlerError?.(error, { subject });
  }

  /** Runs after every (re)connect, before the connection counts as up: channels, exchanges, subscriptions. */
  private async attach(model: ChannelModel): Promise<void> {
    coalesceTurnWrites(model.connection);
    const publisher = await model.createConfirmChannel();
    const requester = await model.createChannel();
    const responder = await model.createChannel();
    const session: Session = {
      model,
      publisher,
      requester,
      responder,
      consumers: [],
      started: new Set(),
      returned: new Set(),
    };
    for (const channel of [publisher, requester, responder]) this.watch(session, channel);
    model.once('close', () => {
      if (this.session === session) this.session = undefined;
    });
    await declareExchanges(publisher, this.names);
    // Every consumer's queue, whether or not it has started yet: RabbitMQ keeps an event only for the
    // queues bound when it is published. A former binding is dropped only by the consumer's own start
    // (consume): dropped here, by whichever process of a new release connects first, the queue of a
    // consumer still of the release before would stop taking what only it reads yet.
    for (const [consumer, types] of Object.entries(eventConsumers))
      for (const { durable, filter } of subscriptionsFor(consumer, types))
        await declareDurable(publisher, this.names, durable, { filter }, []);
    publisher.on('return', (message: Message) => {
      const id = message.properties.correlationId;
      if (typeof id === 'string') session.returned.add(id);
    });
    requester.on('return', (message: Message) => {
      const id = message.properties.correlationId;
      const call = typeof id === 'string' ? this.calls.get(id) : undefined;
      call?.settle({ error: noResponderError(call.subject) });
    });
    await requester.consume(directReplyTo, (message) => message && this.replied(message), { noAck: true });
    this.session = session;
    try {
      // By index: a subscription added while this runs is started here too (or by its own call, once).
      for (let i = 0; i < this.subscriptions.length && !this.draining; i++) {
        await this.start(session, this.subscriptions[i]!);
      }
    } catch (error) {
      if (this.session === session) this.session = undefined;
      throw error;
    }
  }

  /**
   * A channel the server closes while its connection stays up (a queue deleted under its consumer, a
   * refused argument) takes its consumers with it; closing the connection makes recovery set everything
   * up again.
   */
  private watch(session: Session, channel: Channel): void {
    channel.on('error', (error: Error) => this.report(error, 'rabbitmq channel'));
    channel.on('close', () => {
      if (this.closing || this.session !== session) return;
      session.model.close().catch(ignore);
    });
  }

  private async start(session: Session, subscription: Subscription): Promise<void> {
    if (session.started.has(subscription)) return;
    session.started.add(subscription);
    await subscription(session);
  }

  /** Keeps a subscription for every connection to come and starts it on the current one. */
  private async subscribe(subscription: Subscription): Promise<void> {
    this.subscriptions.push(subscription);
    const session = this.session;
    if (session && !this.draining) await this.start(session, subscription);
  }

  private current(): Session {
    if (!this.session || this.closing) throw AppError.unavailable('the RabbitMQ connection is down');
    return this.session;
  }

  /** Publishes on the confirm channel; resolves once the broker has the message (routed, if mandatory). */
  private async confirmed(
    exchange: string,
    routingKey: string,
    content: Buffer,
    options: Options.Publish,
  ): Promise<void> {
    const session = this.current();
    // Fails now rather than waiting out the alarm: the outbox keeps the event and tries again.
    if (this.blocked) throw AppError.unavailable('the broker blocks publishing (a memory or disk alarm)');
    const id = options.mandatory ? randomUUID() : undefined;
    return new Promise((resolve, reject) => {
      try {
        session.publisher.publish(
          exchange,
          routingKey,
          content,
          { ...options, ...(id ? { correlationId: id } : {}) },
          (error: unknown) => {
            // The broker sends an unroutable mandatory message back before it confirms it.
            if (id && session.returned.delete(id)) {
              reject(new Error(`no queue is bound to "${routingKey}" on "${exchange || '(default)'}"`));
            } else if (error) {
              reject(
                error instanceof Error
                  ? error
                  : new Error(`the broker refused the message: ${String(error)}`),
              );
            } else {
              resolve();
            }
          },
        );
      } catch (error) {
        reject(AppError.unavailable(error));
      }
    });
  }

  async request<S extends CommandSubject>(
    subject: S,
    payload: CommandRequest<S>,
    options: RequestOptions = {},
  ): Promise<CommandResult<S>> {
    return timeCommand(subject, async () => {
      const timeoutMs = options.timeoutMs ?? commandTimeoutMs(subject);
      const deadline = Date.now() + timeoutMs;
      let id = '';
      const outcome = new Promise<{ reply: unknown } | { error: AppError }>((resolve) => {
        const watch = watchCall(timeoutMs, options.silenceMs ?? commandLiveness.silenceMs, (reason) =>
          finish({ error: timeoutError(subject, reason) }),
        );
        const finish = (result: { reply: unknown } | { error: AppError }) => {
          watch.stop();
          this.calls.delete(id);
          resolve(result);
        };
        id = this.calls.add({ subject, heard: watch.heard, settle: finish });
      });
      try {
        this.current().requester.publish('', this.names.commandQueue(subject), encode(payload), {
          correlationId: id,
          replyTo: directReplyTo,
          // No queue (no handler listening) sends the message back at once: a 503, not a wait.
          mandatory: true,
          // A command still queued when its caller gives up is dropped, never handled late: the broker
          // drops it once queued that long, the handler checks the caller's deadline for the rest.
          expiration: String(timeoutMs),
          contentType: json,
          headers: { ...outgoingHeaders(), [deadlineHeader]: deadline },
        });
      } catch (error) {
        this.calls.get(id)?.settle({ error: AppError.unavailable(error) });
      }
      const result = await outcome;
      if ('error' in result) throw result.error;
      try {
        return resultFromReply(result.reply) as CommandResult<S>;
      } catch (error) {
        if (error instanceof AppError) throw error;
        throw AppError.unavailable(error);
      }
    });
  }

  private replied(message: ConsumeMessage): void {
    const id = message.properties.correlationId;
    // A reply after its caller gave up finds no call.
    const call = typeof id === 'string' ? this.calls.get(id) : undefined;
    if (!call) return;
    if (message.properties.type === aliveType) {
      call.heard();
      return;
    }
    try {
      call.settle({ reply: decode(message.content) });
    } catch (error) {
      call.settle({ error: AppError.unavailable(error) });
    }
  }

  async handle<S extends CommandSubject>(subject: S, handler: CommandHandler<S>): Promise<void> {
    const schema = commandCatalogue[subject].request;
    const queue = this.names.commandQueue(subject);
    await this.subscribe(async (session) => {
      // Not durable: a command nobody handles must fail now (503), not wait for a handler to come back.
      await session.responder.assertQueue(queue, { durable: false, autoDelete: true });
      // Taken without acknowledgement, like a NATS queue group: at most once, never run twice.
      const { consumerTag } = await session.responder.consume(
        queue,
        (message) => {
          if (!message) return this.lost(session, queue);
          if (callerGaveUp(message)) return void lateCommands.add(1, { subject });
          void this.inFlight.track(
            this.answer(message, subject, (raw) => handler(schema.parse(raw) as never)),
          );
        },
        { noAck: true },
      );
      session.consumers.push({ channel: session.responder, tag: consumerTag });
    });
  }

  private async answer(message: ConsumeMessage, subject: string, run: (raw: unknown) => Promise<unknown>) {
    const headers = (message.properties.headers ?? {}) as Headers;
    await withConsumerSpan({ system: 'rabbitmq', destination: subject }, headerCarrier(headers), async () => {
      const replyTo = message.properties.replyTo;
      let reply: unknown;
      try {
        reply = {
          ok: true,
          data: await this.alive.during(
            () => this.signalAlive(replyTo, message.properties.correlationId),
            () => run(decode(message.content)),
          ),
        };
      } catch (failure) {
        if (!(failure instanceof AppError)) this.report(failure, subject);
        reply = replyFromError(failure);
      }
      if (typeof replyTo !== 'string') return;
      try {
        // Any connection may answer: the reply-to address names the caller's channel, not ours.
        this.current().responder.publish('', replyTo, encode(reply), {
          correlationId: message.properties.correlationId,
          contentType: json,
        });
      } catch (failure) {
        // The connection closed under us; the caller will see a timeout.
        this.report(failure, subject);
      }
    });
  }

  /** An empty message of type `alive` to the caller's reply-to address: still working on it. */
  private signalAlive(replyTo: unknown, correlationId: unknown): void {
    if (typeof replyTo !== 'string') return;
    try {
      this.current().responder.publish('', replyTo, Buffer.alloc(0), {
        correlationId: typeof correlationId === 'string' ? correlationId : undefined,
        type: aliveType,
      });
    } catch {
      // The connection is gone; the caller will hear the silence.
    }
  }

  /** The broker cancelled a consumer (its queue was deleted): a fresh connection declares and consumes again. */
  private lost(session: Session, queue: string): void {
    this.report(new Error(`the broker cancelled the consumer of ${queue}`), queue);
    if (!this.closing && this.session === session) session.model.close().catch(ignore);
  }

  async publish(event: WireEvent): Promise<void> {
    await this.confirmed(this.names.eventsExchange, eventRoute(event), encode(event), {
      persistent: true,
      messageId: event.id,
      contentType: json,
      headers: outgoingHeaders(),
    });
  }

  async notify<S extends NoticeSubject>(subject: S, payload: NoticePayload<S>): Promise<void> {
    try {
      this.current().requester.publish(this.names.noticesExchange, subject, encode(payload), {
        contentType: json,
      });
    } catch (error) {
      throw error instanceof AppError ? error : AppError.unavailable(error);
    }
  }

  async onNotice<S extends NoticeSubject>(
    subject: S,
    handler: (payload: NoticePayload<S>) => void,
  ): Promise<void> {
    const schema = noticeCatalogue[subject];
    await this.subscribe(async (session) => {
      // This replica's own queue, gone with its connection. Named afresh on each connection: the broker may
      // not yet have let go of the queue of a connection it has not noticed is dead.
      const own = this.names.noticeQueue(subject, randomBytes(4).toString('hex'));
      const { queue } = await session.responder.assertQueue(own, {
        exclusive: true,
        autoDelete: true,
        durable: false,
      });
      await session.responder.bindQueue(queue, this.names.noticesExchange, subject);
      const { consumerTag } = await session.responder.consume(
        queue,
        (message) => {
          if (!message) return this.lost(session, queue);
          try {
            handler(schema.parse(decode(message.content)) as NoticePayload<S>);
          } catch (failure) {
            this.report(failure, subject);
          }
        },
        { noAck: true },
      );
      session.consumers.push({ channel: session.responder, tag: consumerTag });
    });
  }

  async consume(options: ConsumeOptions, handler: EventHandler): Promise<void> {
    const { durable } = options;
    const maxDeliver = options.maxDeliver ?? busDefaults.maxDeliver;
    const delays = options.redeliveryDelaysMs ?? [...busDefaults.redeliveryDelaysMs];
    const queue = this.names.durableQueue(durable);
    await this.subscribe(async (session) => {
      const channel = await session.model.createChannel();
      this.watch(session, channel);
      // No more unacknowledged deliveries than can run at once: the broker holds the rest for any replica.
      await channel.prefetch(options.concurrency ?? 1);
      await declareDurable(channel, this.names, durable, options, delays);
      const acks = new ChannelAcks(channel);
      const outageWaiting = outageWaitingOf(
        options,
        () => !this.draining,
        (error) => this.report(error, queue),
      );
      const { consumerTag } = await channel.consume(queue, (message) => {
        if (!message) return this.lost(session, queue);
        if (this.draining) {
          // Arrived as the drain began: straight back to the queue for another replica.
          acks.requeue(message);
          return;
        }
        acks.received(message);
        void this.inFlight
          .track(this.deliver(acks, message, durable, maxDeliver, delays, outageWaiting, handler))
          .catch((error: unknown) => this.report(error, queue));
      });
      session.consumers.push({ channel, tag: consumerTag });
    });
    // The consumer's lag, for the bus.consumer.pending gauge.
    const lag = setInterval(() => {
      this.pending(durable).then((pending) => notePending(durable, pending), ignore);
    }, 15_000);
    lag.unref();
    this.stoppers.push(() => clearInterval(lag));
  }

  private async deliver(
    acks: ChannelAcks,
    message: ConsumeMessage,
    durable: string,
    maxDeliver: number,
    delays: number[],
    outageWaiting: OutageWaiting,
    handler: EventHandler,
  ): Promise<void> {
    const attempt = attemptOf(message);
    if (attempt > 1) redeliveries.add(1, { durable });
    let event: WireEvent;
    try {
      event = WireEvent.parse(decode(message.content));
    } catch (error) {
      await this.giveUp(acks, message, durable, error, attempt, delays);
      return;
    }
    const headers = (message.properties.headers ?? {}) as Headers;
    try {
      await withConsumerSpan(
        {
          system: 'rabbitmq',
          destination: eventSubject(eventRoute(event)),
          messageId: event.id,
        },
        headerCarrier(headers),
        () => waitingOutOutages(() => handler(event, { attempt }), outageWaiting),
      );
      await acks.ack(message);
    } catch (error) {
      // Drained while waiting out an outage: a copy for a replica that stays, its attempts as they were.
      if (error instanceof OutageUnfinished) {
        await this.retryLater(acks, message, durable, attempt - 1, 0);
        return;
      }
      this.report(error, eventSubject(eventRoute(event)));
      if (attempt >= maxDeliver || failsEveryDelivery(error)) {
        await this.giveUp(acks, message, durable, error, attempt, delays);
      } else {
        await this.retryLater(
          acks,
          message,
          durable,
          attempt,
          delays[Math.min(attempt - 1, delays.length - 1)] ?? 0,
        );
      }
    }
  }

  /**
   * RabbitMQ has no delayed negative acknowledgement: a copy waits out the delay in the durable's retry
   * queue, which dead-letters it back when its time to live ends; the original is acknowledged only once
   * the broker has confirmed the copy.
   */
  private async retryLater(
    acks: ChannelAcks,
    message: ConsumeMessage,
    durable: string,
    attempt: number,
    delayMs: number,
  ): Promise<void> {
    const target = delayMs > 0 ? this.names.retryQueue(durable, delayMs) : this.names.durableQueue(durable);
    try {
      await this.confirmed('', target, message.content, {
        ...copiedProperties(message),
        headers: carriedHeaders(message, { [attemptsHeader]: attempt }),
      });
      await acks.ack(message);
    } catch (error) {
      this.report(error, target);
      // Left with the broker, which hands it out again at once (counted toward the delivery limit).
      acks.requeue(message);
    }
  }

  /** Moves an event to the dead letters; if even that fails, it is left for redelivery, never dropped. */
  private async giveUp(
    acks: ChannelAcks,
    message: ConsumeMessage,
    durable: string,
    error: unknown,
    attempt: number,
    delays: number[],
  ): Promise<void> {
    try {
      await this.confirmed(this.names.deadLetterExchange, this.names.durableKey(durable), message.content, {
        ...copiedProperties(message),
        headers: carriedHeaders(message, {
          [attemptsHeader]: attempt,
          // AMQP headers are bounded (amqplib encodes at most 64 KiB of them); a reason needs far less.
          [errorHeader]: errorMessage(error).slice(0, maxErrorLength),
        }),
      });
      await acks.ack(message);
    } catch (deadLetterError) {
      this.report(deadLetterError, this.names.deadLetterQueue(durable));
      await this.retryLater(acks, message, durable, attempt, delays[delays.length - 1] ?? 0);
    }
  }

  /** Runs `work` on a channel of its own, so a refusal (a queue that does not exist) closes only that. */
  private async onOwnChannel<T>(work: (channel: Channel) => Promise<T>): Promise<T> {
    const channel = await this.current().model.createChannel();
    channel.on('error', ignore);
    try {
      return await work(channel);
    } finally {
      await channel.close().catch(ignore);
    }
  }

  async pending(durable: string): Promise<number> {
    const queue = this.names.durableQueue(durable);
    return this.onOwnChannel(async (channel) => (await channel.checkQueue(queue)).messageCount);
  }

  /**
   * Reads the dead letters without taking them: fetched unacknowledged, then all handed back, which puts
   * them back where they were.
   */
  async deadLetters(durable: string, limit = 100): Promise<DeadLetter[]> {
    const letters: DeadLetter[] = [];
    await this.eachDeadLetter(durable, limit, async (message) => {
      letters.push(letterFrom(durable, message));
    });
    return letters;
  }

  async redrive(durable: string, limit = 100): Promise<number> {
    const queue = this.names.durableQueue(durable);
    let redriven = 0;
    await this.eachDeadLetter(durable, limit, async (message, channel) => {
      if (!readableEvent(message.content)) return;
      // Its deliveries counted afresh: no attempts header, no x-death.
      await this.confirmed('', queue, message.content, copiedProperties(message));
      channel.ack(message);
      redriven++;
    });
    return redriven;
  }

  /**
   * Visits up to `limit` of a durable's dead letters, oldest first, fetched unacknowledged on a channel of
   * their own; those `visit` does not acknowledge are all handed back at the end, which puts them back
   * where they were. A durable that never consumed has no dead-letter queue, and so none.
   */
  private async eachDeadLetter(
    durable: string,
    limit: number,
    visit: (message: Message, channel: Channel) => Promise<void>,
  ): Promise<void> {
    const queue = this.names.deadLetterQueue(durable);
    await this.onOwnChannel(async (channel) => {
      try {
        for (let seen = 0; seen < limit; seen++) {
          const message = await channel.get(queue, { noAck: false });
          if (!message) break;
          await visit(message, channel);
        }
      } catch (error) {
        if ((error as { code?: unknown }).code !== 404) throw error;
      } finally {
        settle(() => channel.nackAll(true));
      }
    });
  }

  healthy(): boolean {
    return this.connected && this.session !== undefined && !this.closing;
  }

  /** Closes the connection at once, in-flight deliveries left unacknowledged (back to their queues), as a crash would. */
  async abort(): Promise<void> {
    this.draining = true;
    await this.close();
  }

  async drain(beforeClose?: () => Promise<void>): Promise<void> {
    if (this.draining) return;
    this.draining = true;
    const consumers = this.session?.consumers.splice(0) ?? [];
    await Promise.all(consumers.map(({ channel, tag }) => channel.cancel(tag).catch(ignore)));
    await this.inFlight.idle();
    await beforeClose?.();
    await this.close();
  }

  private async close(): Promise<void> {
    for (const stop of this.stoppers.splice(0)) stop();
    this.alive.stop();
    this.closing = true;
    this.connected = false;
    await this.connection?.close();
  }
}
