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
  WireEvent,
} from '@inbox/contracts';
import { withConsumerSpan } from '@inbox/telemetry';
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
import { noResponderError, replyFromError, resultFromReply, timeoutError } from './command-reply.js';
import { InFlight } from './in-flight.js';
import { timeCommand } from './metrics.js';
import { OutageUnfinished, type OutageWaiting, waitingOutOutages } from './outage.js';
import { subjectMatches } from './subjects.js';
import { failsEveryDelivery } from './unreadable-event.js';

type AnyHandler = (payload: unknown) => Promise<unknown>;

interface Durable {
  options: ConsumeOptions;
  outageWaiting: OutageWaiting;
  handlers: EventHandler[];
  nextHandler: number;
  queue: Array<{ event: WireEvent; attempt: number }>;
  running: number;
}

const emptyCarrier = { get: () => undefined, set: () => undefined, keys: () => [] };
// Values cross the in-process bus as JSON, as they would cross the network, so no caller can come to
// depend on sharing object references with a handler.
const roundTrip = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;

/**
 * The bus inside one process, for the all-in-one local mode: the same semantics as the NATS transport
 * (queue groups, durable consumers shared by "replicas", explicit ack, bounded redelivery, dead letters,
 * de-duplication by event id), kept in memory, so nothing survives a restart.
 */
export class InProcessBus implements Bus {
  private readonly handlers = new Map<string, { list: AnyHandler[]; next: number }>();
  private readonly log: WireEvent[] = [];
  private readonly seen = new Map<string, number>();
  private readonly durables = new Map<string, Durable>();
  private readonly letters: DeadLetter[] = [];
  private readonly noticeHandlers = new Map<string, Array<(payload: unknown) => void>>();
  private readonly inFlight = new InFlight();
  private readonly timers = new Set<NodeJS.Timeout>();
  /** Set first on drain: no new commands or deliveries start, but in-flight work may still publish. */
  private intakeClosed = false;
  private closed = false;

  constructor(
    private readonly options: {
      onHandlerError?: (error: unknown, context: { subject: string }) => void;
      /**
       * How many events the log keeps for durables that start later, and how many dead letters are
       * kept, the oldest dropped first: the all-in-one runs for as long as its user leaves it, and kept
       * every event of every send it ever made (the NATS streams are bounded by age and size).
       */
      keep?: number;
    } = {},
  ) {}

  private get keep(): number {
    return this.options.keep ?? 10_000;
  }

  async request<S extends CommandSubject>(
    subject: S,
    payload: CommandRequest<S>,
    options: RequestOptions = {},
  ): Promise<CommandResult<S>> {
    return timeCommand(subject, async () => {
      const entry = this.handlers.get(subject);
      if (this.intakeClosed || !entry || entry.list.length === 0) throw noResponderError(subject);
      const handler = entry.list[entry.next++ % entry.list.length]!;
      const work = this.inFlight.track(handler(roundTrip(payload)));
      const timeoutMs = options.timeoutMs ?? commandTimeoutMs(subject);
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(timeoutError(subject)), timeoutMs);
      });
      try {
        return resultFromReply(await Promise.race([work, timeout])) as CommandResult<S>;
      } finally {
        clearTimeout(timer);
      }
    });
  }

  async handle<S extends CommandSubject>(subject: S, handler: CommandHandler<S>): Promise<void> {
    const schema = commandCatalogue[subject].request;
    const wrapped: AnyHandler = (payload) =>
      withConsumerSpan({ system: 'in-process', destination: subject }, emptyCarrier, async () => {
        try {
          const data = await handler(schema.parse(payload) as Parameters<CommandHandler<S>>[0]);
          return roundTrip({ ok: true, data });
        } catch (error) {
          if (!(error instanceof AppError)) this.options.onHandlerError?.(error, { subject });
          return replyFromError(error);
        }
      });
    const entry = this.handlers.get(subject) ?? { list: [], next: 0 };
    entry.list.push(wrapped);
    this.handlers.set(subject, entry);
  }

  async publish(event: WireEvent): Promise<void> {
    if (this.closed) throw AppError.unavailable('bus closed');
    this.forgetOldIds();
    if (this.seen.has(event.id)) return;
    this.seen.set(event.id, Date.now());
    const stored = roundTrip(event);
    this.log.push(stored);
    if (this.log.length > this.keep) this.log.splice(0, this.log.length - this.keep);
    for (const durable of this.durables.values()) {
      if (subjectMatches(durable.options.filter, eventRoute(stored))) this.enqueue(durable, stored, 1, 0);
    }
  }

  // The same two-minute de-duplication window the NATS stream is created with.
  private forgetOldIds(): void {
    const horizon = Date.now() - 120_000;
    for (const [id, at] of this.seen) {
      if (at >= horizon) break;
      this.seen.delete(id);
    }
  }

  async notify<S extends NoticeSubject>(subject: S, payload: NoticePayload<S>): Promise<void> {
    if (this.closed) return;
    for (const handler of this.noticeHandlers.get(subject) ?? []) {
      try {
        handler(noticeCatalogue[subject].parse(roundTrip(payload)));
      } catch (error) {
        this.options.onHandlerError?.(error, { subject });
      }
    }
  }

  async onNotice<S extends NoticeSubject>(
    subject: S,
    handler: (payload: NoticePayload<S>) => void,
  ): Promise<void> {
    const list = this.noticeHandlers.get(subject) ?? [];
    list.push(handler as (payload: unknown) => void);
    this.noticeHandlers.set(subject, list);
  }

  async consume(options: ConsumeOptions, handler: EventHandler): Promise<void> {
    const existing = this.durables.get(options.durable);
    if (existing) {
      existing.handlers.push(handler);
      return;
    }
    const durable: Durable = {
      options,
      outageWaiting: outageWaitingOf(
        options,
        () => !this.intakeClosed,
        (error) => this.options.onHandlerError?.(error, { subject: options.filter }),
      ),
      handlers: [handler],
      nextHandler: 0,
      queue: [],
      running: 0,
    };
    this.durables.set(options.durable, durable);
    // A new durable starts from the beginning of the stream, as a JetStream durable with deliver-all does.
    for (const event of this.log) {
      if (subjectMatches(options.filter, eventRoute(event))) this.enqueue(durable, event, 1, 0);
    }
  }

  private enqueue(durable: Durable, event: WireEvent, attempt: number, delayMs: number): void {
    const push = () => {
      durable.queue.push({ event, attempt });
      this.pump(durable);
    };
    if (delayMs <= 0) {
      push();
      return;
    }
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      push();
    }, delayMs);
    this.timers.add(timer);
  }

  private pump(durable: Durable): void {
    const limit = durable.options.concurrency ?? 1;
    while (!this.intakeClosed && durable.running < limit && durable.queue.length > 0) {
      const { event, attempt } = durable.queue.shift()!;
      const handler = durable.handlers[durable.nextHandler++ % durable.handlers.length]!;
      durable.running++;
      void this.inFlight.track(this.deliver(durable, handler, event, attempt)).finally(() => {
        durable.running--;
        this.pump(durable);
      });
    }
  }

  private async deliver(durable: Durable, handler: EventHandler, event: WireEvent, attempt: number) {
    try {
      await withConsumerSpan(
        {
          system: 'in-process',
          destination: eventSubject(eventRoute(event)),
          messageId: event.id,
        },
        emptyCarrier,
        () => waitingOutOutages(() => handler(roundTrip(event), { attempt }), durable.outageWaiting),
      );
    } catch (error) {
      // Drained while waiting out an outage: queued again, its attempt as it was.
      if (error instanceof OutageUnfinished) return this.enqueue(durable, event, attempt, 0);
      this.options.onHandlerError?.(error, { subject: eventSubject(eventRoute(event)) });
      const maxDeliver = durable.options.maxDeliver ?? busDefaults.maxDeliver;
      if (attempt >= maxDeliver || failsEveryDelivery(error)) {
        this.letters.push({
          durable: durable.options.durable,
          event,
          error: errorMessage(error),
          attempts: attempt,
        });
        if (this.letters.length > this.keep) this.letters.splice(0, this.letters.length - this.keep);
        return;
      }
      const delays = durable.options.redeliveryDelaysMs ?? busDefaults.redeliveryDelaysMs;
      this.enqueue(durable, event, attempt + 1, delays[Math.min(attempt - 1, delays.length - 1)] ?? 0);
    }
  }

  async pending(durableName: string): Promise<number> {
    return this.durables.get(durableName)?.queue.length ?? 0;
  }

  async deadLetters(durable: string, limit = 100): Promise<DeadLetter[]> {
    return this.letters.filter((letter) => letter.durable === durable).slice(0, limit);
  }

  async redrive(durableName: string, limit = 100): Promise<number> {
    const durable = this.durables.get(durableName);
    if (!durable) return 0;
    const taken = this.letters
      .filter((letter) => letter.durable === durableName && WireEvent.safeParse(letter.event).success)
      .slice(0, limit);
    for (const letter of taken) {
      this.letters.splice(this.letters.indexOf(letter), 1);
      this.enqueue(durable, letter.event as WireEvent, 1, 0);
    }
    return taken.length;
  }

  healthy(): boolean {
    return !this.closed;
  }

  async drain(beforeClose?: () => Promise<void>): Promise<void> {
    this.intakeClosed = true;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    await this.inFlight.idle();
    await beforeClose?.();
    this.closed = true;
  }
}
