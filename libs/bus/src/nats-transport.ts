import {
  AppError,
  type CommandRequest,
  type CommandResult,
  type CommandSubject,
  commandCatalogue,
  commandTimeoutMs,
  errorMessage,
  eventRoute,
  eventSubject,
  type NoticePayload,
  type NoticeSubject,
  noticeCatalogue,
  serviceOf,
  WireEvent,
} from '@inbox/contracts';
import { type HeaderCarrier, injectContext, withConsumerSpan } from '@inbox/telemetry';
import {
  AckPolicy,
  DeliverPolicy,
  DiscardPolicy,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
  jetstream,
  jetstreamManager,
  RetentionPolicy,
  StorageType,
} from '@nats-io/jetstream';
import {
  headers as createHeaders,
  createInbox,
  Empty,
  type Msg,
  type MsgHdrs,
  type NatsConnection,
  NoRespondersError,
  nanos,
  PermissionViolationError,
} from '@nats-io/transport-node';
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
import { InFlight } from './in-flight.js';
import { notePending, redeliveries, timeCommand } from './metrics.js';
import { connectCoalescing } from './nats-turn-writes.js';
import { OutageUnfinished, type OutageWaiting, waitingOutOutages } from './outage.js';
import { PendingCalls } from './pending-calls.js';
import { SubjectNames } from './subjects.js';
import { failsEveryDelivery } from './unreadable-event.js';

export interface NatsBusOptions {
  url: string;
  /** Isolates subjects and streams, e.g. per test file; empty in production. */
  prefix?: string;
  /** Name shown in the server's connection list. */
  name?: string;
  onHandlerError?: (error: unknown, context: { subject: string }) => void;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const encode = (value: unknown) => encoder.encode(JSON.stringify(value));
const decode = (data: Uint8Array): unknown => JSON.parse(decoder.decode(data));

function headerCarrier(h: MsgHdrs): HeaderCarrier {
  return {
    get: (name) => (h.has(name) ? h.get(name) : undefined),
    set: (name, value) => h.set(name, value),
    keys: () => [...h.keys()],
  };
}

function outgoingHeaders(): MsgHdrs {
  const h = createHeaders();
  injectContext(headerCarrier(h));
  return h;
}

/** A command waiting for its reply: settled by the reply, a 503 from the server, or its watch. */
interface PendingCall {
  subject: string;
  /** The subject as sent on the wire, to match the server's refusal to publish it. */
  wire: string;
  heard: () => void;
  settle: (outcome: { reply: Msg } | { error: AppError }) => void;
}

/**
 * Events a durable may have handed out and not yet acknowledged, those waiting out a redelivery delay
 * included, past which the server delivers it nothing more. The server's default, 1,000, let a thousand
 * of one tenant's events that failed on every delivery hold every other tenant's events for the minutes
 * of their redelivery schedule.
 */
const maxAckPending = 20_000;

const twoMinutes = 120_000;
const day = 86_400_000;

export class NatsBus implements Bus {
  private readonly names: SubjectNames;
  private readonly inFlight = new InFlight();
  private readonly stoppers: Array<() => Promise<void>> = [];
  private readonly alive = new AliveSignals();
  /** Replies, signs of life and no-responder statuses of every command this connection sends. */
  private readonly replies: string;
  private readonly calls = new PendingCalls<PendingCall>();
  private draining = false;
  // The client reconnects forever, so "closed" never tells of an outage; the status stream does.
  private connected = true;

  private constructor(
    private readonly nc: NatsConnection,
    private readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
    private readonly options: NatsBusOptions,
    inboxPrefix: string,
  ) {
    this.names = new SubjectNames(options.prefix);
    // One subscription for all replies (as the client's own request() does), read here so that a
    // handler's signs of life keep a call waiting instead of being taken for its answer.
    this.replies = createInbox(inboxPrefix);
    nc.subscribe(`${this.replies}.*`, {
      callback: (error, msg) => {
        if (!error) this.replied(msg);
      },
    });
    void (async () => {
      for await (const status of nc.status()) {
        if (status.type === 'disconnect') this.connected = false;
        if (status.type === 'reconnect') this.connected = true;
        if (status.type === 'error') this.refused(status.error);
      }
    })().catch(() => undefined);
  }

  static async connect(options: NatsBusOptions): Promise<NatsBus> {
    // nats.js ignores credentials in a server URL, so nats://user:password@host:4222 is split here. Each
    // user gets its own inbox prefix, _INBOX_<user>, which the server's permissions
    // (deploy/nats/nats-server.conf) let only that user subscribe to: no service reads another's replies.
    const url = URL.canParse(options.url) ? new URL(options.url) : undefined;
    const user = url?.username ? decodeURIComponent(url.username) : undefined;
    const inboxPrefix = user ? `_INBOX_${user}` : '_INBOX';
    const server =
      url && user
        ? {
            servers: `${url.protocol}//${url.host}`,
            user,
            pass: decodeURIComponent(url.password),
            inboxPrefix,
          }
        : { servers: options.url };
    const nc = await connectCoalescing({
      ...server,
      name: options.name,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 500,
      // Otherwise every request and publish captures a stack trace for an error that almost never comes.
      noAsyncTraces: true,
    });
    const jsm = await jetstreamManager(nc);
    const bus = new NatsBus(nc, jetstream(nc), jsm, options, inboxPrefix);
    await bus.ensureStreams();
    return bus;
  }

  // Both streams are created idempotently by every process, so start order never matters.
  private async ensureStreams(): Promise<void> {
    const streams = [
      // Events are kept a week: long enough for a consumer that was down to catch up, bounded so the
      // disk never fills. Dead letters are kept a month for an operator to look at.
      {
        name: this.names.eventsStream,
        subjects: [this.names.event('>')],
        retention: RetentionPolicy.Limits,
        discard: DiscardPolicy.Old,
        max_age: nanos(7 * day),
        duplicate_window: nanos(twoMinutes),
      },
      {
        name: this.names.deadLetterStream,
        subjects: [this.names.deadLetter('>')],
        retention: RetentionPolicy.Limits,
        discard: DiscardPolicy.Old,
        max_age: nanos(30 * day),
        duplicate_window: nanos(twoMinutes),
      },
    ];
    for (const config of streams) {
      try {
        await this.jsm.streams.info(config.name);
      } catch {
        await this.jsm.streams.add({ ...config, storage: StorageType.File }).catch(async (error) => {
          // Replicas starting together on a server without the stream: another one's add can be under way
          // between this one's look and its add, and the server refuses the second ("subjects overlap with an
          // existing stream"). The stream is there now; anything else is a real refusal.
          await this.jsm.streams.info(config.name).catch(() => Promise.reject(error));
        });
      }
    }
  }

  async request<S extends CommandSubject>(
    subject: S,
    payload: CommandRequest<S>,
    options: RequestOptions = {},
  ): Promise<CommandResult<S>> {
    const wire = this.names.command(subject);
    return timeCommand(subject, async () => {
      let token = '';
      const result = await new Promise<{ reply: Msg } | { error: AppError }>((resolve) => {
        const watch = watchCall(
          options.timeoutMs ?? commandTimeoutMs(subject),
          options.silenceMs ?? commandLiveness.silenceMs,
          (reason) => settle({ error: timeoutError(subject, reason) }),
        );
        const settle = (outcome: { reply: Msg } | { error: AppError }) => {
          watch.stop();
          this.calls.delete(token);
          resolve(outcome);
        };
        token = this.calls.add({ subject, wire, heard: watch.heard, settle });
        try {
          this.nc.publish(wire, encode(payload), {
            reply: `${this.replies}.${token}`,
            headers: outgoingHeaders(),
          });
        } catch (error) {
          settle({ error: AppError.unavailable(error) });
        }
      });
      if ('error' in result) throw result.error;
      try {
        return resultFromReply(decode(result.reply.data)) as CommandResult<S>;
      } catch (error) {
        if (error instanceof AppError) throw error;
        throw AppError.unavailable(error);
      }
    });
  }

  /** A message on the reply inbox: the answer, a sign of life (empty), or the server's 503 (no one listens). */
  private replied(msg: Msg): void {
    const call = this.calls.get(msg.subject.slice(this.replies.length + 1));
    // A reply after its caller gave up finds no call.
    if (!call) return;
    if (msg.data.length > 0) call.settle({ reply: msg });
    else if (msg.headers?.code === 503)
      call.settle({ error: noResponderError(call.subject, new NoRespondersError(call.subject)) });
    else call.heard();
  }

  /** The server refused to carry a command this connection may not send: its callers hear it now. */
  private refused(error: unknown): void {
    if (!(error instanceof PermissionViolationError) || error.operation !== 'publish') return;
    for (const call of this.calls.values())
      if (call.wire === error.subject) call.settle({ error: AppError.unavailable(error) });
  }

  async handle<S extends CommandSubject>(subject: S, handler: CommandHandler<S>): Promise<void> {
    const schema = commandCatalogue[subject].request;
    const subscription = this.nc.subscribe(this.names.command(subject), {
      queue: serviceOf(subject),
      callback: (error, msg) => {
        if (error) return;
        const carrier = headerCarrier(msg.headers ?? createHeaders());
        void this.inFlight.track(
          withConsumerSpan({ system: 'nats', destination: subject }, carrier, async () => {
            let reply: unknown;
            try {
              const payload = schema.parse(decode(msg.data));
              reply = {
                ok: true,
                data: await this.alive.during(
                  () => this.signalAlive(msg),
                  () => handler(payload as Parameters<CommandHandler<S>>[0]),
                ),
              };
            } catch (failure) {
              if (!(failure instanceof AppError)) this.options.onHandlerError?.(failure, { subject });
              reply = replyFromError(failure);
            }
            try {
              msg.respond(this.fitting(reply, subject));
            } catch (failure) {
              // The connection closed under us; the caller will see a timeout.
              this.options.onHandlerError?.(failure, { subject });
            }
          }),
        );
      },
    });
    // drain() answers what is already queued for this replica, then leaves the queue group.
    this.stoppers.push(() => subscription.drain());
    // Once handle() resolves the server knows the subscription, so a replica that says it is ready
    // is really in the queue group.
    await this.nc.flush();
  }

  /** An empty message to the caller's inbox: still working on it. */
  private signalAlive(msg: Msg): void {
    try {
      msg.respond(Empty);
    } catch {
      // The connection is closing; the caller will hear the silence.
    }
  }

  /**
   * The encoded reply, or an internal error in its place when it exceeds what the server carries: a
   * reply the server refused would leave the caller waiting for its whole timeout.
   */
  private fitting(reply: unknown, subject: string): Uint8Array {
    const encoded = encode(reply);
    const limit = this.nc.info?.max_payload;
    if (limit === undefined || encoded.length <= limit) return encoded;
    const failure = new Error(`reply of ${encoded.length} bytes exceeds the bus's ${limit}-byte limit`);
    this.options.onHandlerError?.(failure, { subject });
    return encode(replyFromError(failure));
  }

  async publish(event: WireEvent): Promise<void> {
    const subject = this.names.event(eventRoute(event));
    await this.js.publish(subject, encode(event), { msgID: event.id, headers: outgoingHeaders() });
  }

  async notify<S extends NoticeSubject>(subject: S, payload: NoticePayload<S>): Promise<void> {
    this.nc.publish(this.names.command(subject), encode(payload));
    await this.nc.flush();
  }

  async onNotice<S extends NoticeSubject>(
    subject: S,
    handler: (payload: NoticePayload<S>) => void,
  ): Promise<void> {
    const schema = noticeCatalogue[subject];
    const subscription = this.nc.subscribe(this.names.command(subject), {
      callback: (error, msg) => {
        if (error) return;
        try {
          handler(schema.parse(decode(msg.data)) as NoticePayload<S>);
        } catch (failure) {
          this.options.onHandlerError?.(failure, { subject });
        }
      },
    });
    this.stoppers.push(async () => subscription.unsubscribe());
    // As for commands: once this resolves the server knows the subscription, so no notice is missed.
    await this.nc.flush();
  }

  async consume(options: ConsumeOptions, handler: EventHandler): Promise<void> {
    const durable = this.names.durable(options.durable);
    const maxDeliver = options.maxDeliver ?? busDefaults.maxDeliver;
    const delays = options.redeliveryDelaysMs ?? [...busDefaults.redeliveryDelaysMs];
    const ackWaitMs = options.ackWaitMs ?? busDefaults.ackWaitMs;
    const config = {
      durable_name: durable,
      ack_policy: AckPolicy.Explicit,
      // A new durable starts at the oldest event the stream still keeps (a week at most), or where the
      // caller says, for one that takes over what another durable read until now.
      ...(options.startBackMs === undefined
        ? { deliver_policy: DeliverPolicy.All }
        : {
            deliver_policy: DeliverPolicy.StartTime,
            opt_start_time: new Date(Date.now() - options.startBackMs).toISOString(),
          }),
      // One filter subject only: nats-server 2.9 has no multi-subject filters.
      filter_subject: this.names.event(options.filter),
      // The server may redeliver one more time than we count, should a process die mid-handling;
      // the dead-letter decision is ours, taken on our own count.
      max_deliver: maxDeliver + 1,
      ack_wait: nanos(ackWaitMs),
      max_ack_pending: maxAckPending,
    };
    try {
      await this.jsm.consumers.info(this.names.eventsStream, durable);
      await this.jsm.consumers.update(this.names.eventsStream, durable, {
        max_deliver: config.max_deliver,
        ack_wait: config.ack_wait,
        max_ack_pending: config.max_ack_pending,
        filter_subject: config.filter_subject,
      });
    } catch {
      await this.jsm.consumers.add(this.names.eventsStream, config);
    }
    const consumer = await this.js.consumers.get(this.names.eventsStream, durable);
    const limit = options.concurrency ?? 1;
    // Pull no more than can run at once: a message waiting in a local buffer still ages toward its
    // ack deadline, and would be handed to another replica while this one has not started it.
    const messages = await consumer.consume({ max_messages: limit });
    const slots = new InFlight();
    const outageWaiting = outageWaitingOf(
      options,
      () => !this.draining,
      (error) => this.options.onHandlerError?.(error, { subject: this.names.event(options.filter) }),
    );
    // The consumer's lag, for the bus.consumer.pending gauge.
    const lag = setInterval(() => {
      this.pending(options.durable).then(
        (pending) => notePending(options.durable, pending),
        () => undefined,
      );
    }, 15_000);
    lag.unref();
    this.stoppers.push(async () => clearInterval(lag));
    const loop = (async () => {
      for await (const msg of messages) {
        if (this.draining) {
          // Fetched but not started when the drain began: give it straight back to the stream.
          msg.nak();
          continue;
        }
        // From now until the handler ends, tell the server the message is being worked on.
        const heartbeat = setInterval(() => msg.working(), Math.max(1_000, ackWaitMs / 3));
        await slots.acquire(limit);
        void this.inFlight
          .track(this.deliver(msg, options.durable, maxDeliver, delays, outageWaiting, handler))
          .catch((error: unknown) => this.options.onHandlerError?.(error, { subject: msg.subject }))
          .finally(() => {
            clearInterval(heartbeat);
            slots.release();
          });
      }
    })().catch((error: unknown) => this.options.onHandlerError?.(error, { subject: options.filter }));
    this.stoppers.push(async () => {
      await messages.close();
      await loop;
    });
  }

  private async deliver(
    msg: JsMsg,
    durable: string,
    maxDeliver: number,
    delays: number[],
    outageWaiting: OutageWaiting,
    handler: EventHandler,
  ): Promise<void> {
    const attempt = msg.info.deliveryCount;
    if (attempt > 1) redeliveries.add(1, { durable });
    let event: WireEvent;
    try {
      event = WireEvent.parse(msg.json());
    } catch (error) {
      await this.giveUp(msg, durable, { raw: decoder.decode(msg.data) }, error, attempt, delays);
      return;
    }
    const carrier = headerCarrier(msg.headers ?? createHeaders());
    try {
      await withConsumerSpan(
        { system: 'nats', destination: eventSubject(eventRoute(event)), messageId: event.id },
        carrier,
        () => waitingOutOutages(() => handler(event, { attempt }), outageWaiting),
      );
      msg.ack();
    } catch (error) {
      // Drained while waiting out an outage: back to the stream for a replica that stays.
      if (error instanceof OutageUnfinished) return void msg.nak();
      this.options.onHandlerError?.(error, { subject: eventSubject(eventRoute(event)) });
      if (attempt >= maxDeliver || failsEveryDelivery(error)) {
        await this.giveUp(msg, durable, event, error, attempt, delays);
      } else {
        msg.nak(delays[Math.min(attempt - 1, delays.length - 1)] ?? 0);
      }
    }
  }

  /** Moves an event to the dead letters; if even that fails, it is left for redelivery, never dropped. */
  private async giveUp(
    msg: JsMsg,
    durable: string,
    event: unknown,
    error: unknown,
    attempts: number,
    delays: number[],
  ): Promise<void> {
    try {
      await this.deadLetter(durable, event, error, attempts);
      msg.term('moved to dead letters');
    } catch (deadLetterError) {
      this.options.onHandlerError?.(deadLetterError, { subject: this.names.deadLetter(durable) });
      msg.nak(delays[delays.length - 1] ?? 0);
    }
  }

  private async deadLetter(durable: string, event: unknown, error: unknown, attempts: number): Promise<void> {
    const letter = { durable, event, error: errorMessage(error), attempts };
    const id = (event as { id?: string }).id;
    await this.js.publish(this.names.deadLetter(this.names.durable(durable)), encode(letter), {
      ...(id ? { msgID: `${durable}:${id}` } : {}),
    });
  }

  async pending(durable: string): Promise<number> {
    const info = await this.jsm.consumers.info(this.names.eventsStream, this.names.durable(durable));
    return info.num_pending;
  }

  async deadLetters(durable: string, limit = 100): Promise<DeadLetter[]> {
    const letters: DeadLetter[] = [];
    await this.eachDeadLetter(durable, limit, async (msg) => {
      letters.push(msg.json<DeadLetter>());
    });
    return letters;
  }

  async redrive(durable: string, limit = 100): Promise<number> {
    let redriven = 0;
    await this.eachDeadLetter(durable, limit, async (msg) => {
      const event = WireEvent.safeParse(msg.json<DeadLetter>().event);
      if (!event.success) return;
      // A message id of its own: the stream would drop the event's id within its window.
      await this.js.publish(this.names.event(eventRoute(event.data)), encode(event.data), {
        msgID: `redrive:${msg.seq}`,
      });
      await this.jsm.streams.deleteMessage(this.names.deadLetterStream, msg.seq);
      redriven++;
    });
    return redriven;
  }

  /** Visits up to `limit` of a durable's dead letters, oldest first, through a consumer made for it. */
  private async eachDeadLetter(
    durable: string,
    limit: number,
    visit: (msg: JsMsg) => Promise<void>,
  ): Promise<void> {
    const consumer = await this.js.consumers.get(this.names.deadLetterStream, {
      filter_subjects: this.names.deadLetter(this.names.durable(durable)),
      deliver_policy: DeliverPolicy.All,
    });
    try {
      const wanted = Math.min(limit, (await consumer.info(true)).num_pending);
      if (wanted === 0) return;
      let seen = 0;
      for await (const msg of await consumer.fetch({ max_messages: wanted, expires: 2_000 })) {
        await visit(msg);
        if (++seen >= wanted) break;
      }
    } finally {
      await consumer.delete().catch(() => undefined);
    }
  }

  /** Closes the connection at once, in-flight deliveries left unacknowledged, as a crash would. */
  async abort(): Promise<void> {
    this.draining = true;
    this.alive.stop();
    await this.nc.close();
  }

  healthy(): boolean {
    return this.connected && !this.nc.isClosed() && !this.nc.isDraining();
  }

  async drain(beforeClose?: () => Promise<void>): Promise<void> {
    if (this.draining) return;
    this.draining = true;
    await Promise.all(this.stoppers.splice(0).map((stop) => stop()));
    await this.inFlight.idle();
    await beforeClose?.();
    this.alive.stop();
    await this.nc.drain();
  }
}
