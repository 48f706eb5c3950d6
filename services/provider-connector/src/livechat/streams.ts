import type { Logger } from '@inbox/service-kit';
import type { Response } from 'express';
import type { LivechatMessage, LivechatStore, MessagePage } from './store.js';

/** One SSE event per message; the seq is its id, which a reconnecting widget sends back. */
export function sseEvent(message: LivechatMessage): string {
  // JSON has no raw line breaks, so a hostile text cannot end the event or forge another.
  const data = JSON.stringify({
    id: message.id,
    author: message.author,
    text: message.text,
    sent_at: message.created_at.toISOString(),
  });
  return `id: ${message.seq}\nevent: message\ndata: ${data}\n\n`;
}

/** The seq a reconnecting widget saw last (`Last-Event-ID`); 0, the start, when absent or not ours. */
export function lastSeenSeq(header: string | undefined): bigint {
  if (!header || !/^\d{1,18}$/.test(header)) return 0n;
  return BigInt(header);
}

/** Ended by either side: nothing more is written to it. */
const ended = (res: Response) => res.writableEnded || res.destroyed;

/** A page the sweep read for a session, from the seq it read after. */
type Known = MessagePage & { from: bigint };

interface Stream {
  res: Response;
  lastSeq: bigint;
  /** Reads are chained, so two wake-ups never send the same message twice or out of order. */
  pending: Promise<void>;
  /** The read waiting its turn in the chain, if any: a wake-up meanwhile joins it instead of queueing. */
  queued?: { known?: Known };
}

export interface StreamLimits {
  perSession: number;
  /**
   * One integration's share of the process: its widgets' visitors open streams at will (a session costs
   * nothing but a name), and without a share one tenant's could take every stream the process allows.
   */
  perIntegration: number;
  /** A workspace's share, whatever number of integrations it creates to widen its own. */
  perWorkspace: number;
  /**
   * One client address's share (an IPv6 /64 counts as one), whichever integrations it opens them on: an
   * integration's id is in every page that embeds its widget, so one client taking the shares of a few
   * workspaces' widgets held every stream the process allows, refusing every other tenant's visitors.
   * An office behind one address still has room for a hundred open chats.
   */
  perAddress: number;
  perProcess: number;
  /** How often every open stream looks for messages a lost notice did not announce, and keeps alive. */
  sweepMs: number;
  /**
   * How long a stream may leave unread what it was sent before it is ended. A stream writes no further
   * while its socket's buffer is full: a client that opens streams and never reads them would otherwise
   * have the process hold each session's whole history for it. The widget reconnects from the last
   * message it read (`Last-Event-ID`), so ending a slow stream loses nothing.
   */
  drainMs: number;
}

export const defaultStreamLimits: StreamLimits = {
  perSession: 5,
  perIntegration: 2_000,
  perWorkspace: 4_000,
  perAddress: 100,
  perProcess: 10_000,
  sweepMs: 5_000,
  drainMs: 30_000,
};

/** Most sessions the sweep reads in one statement: its answer is at most 4,000 messages. */
const sweepSessions = 200;

/**
 * The widget streams this replica holds, by session. A new message is announced to every replica by a
 * bus notice; the one holding the session's streams reads what they have not sent yet and sends it. A
 * periodic sweep does the same for every stream, so a missed notice only delays a message.
 */
export class LivechatStreams {
  private readonly sessions = new Map<string, Set<Stream>>();
  /**
   * Open streams by integration (`i:<id>`), by workspace (`w:<id>`) and by client address (`a:<address>`),
   * for those that have any.
   */
  private readonly shares = new Map<string, number>();
  private open = 0;
  private sweeper: NodeJS.Timeout | undefined;
  private sweeping = false;

  constructor(
    private readonly store: LivechatStore,
    private readonly logger: Logger,
    readonly limits: StreamLimits = defaultStreamLimits,
  ) {}

  /**
   * False when the session, its integration, its workspace, the client's address or this process already
   * holds as many streams as allowed.
   */
  attach(
    { integrationId, workspaceId, address }: { integrationId: string; workspaceId: string; address: string },
    sessionId: string,
    res: Response,
    afterSeq: bigint,
  ): boolean {
    // Closed while its session was looked up: its close has been, and would never give the places back.
    if (ended(res)) return false;
    const streams = this.sessions.get(sessionId) ?? new Set<Stream>();
    const shares = [`i:${integrationId}`, `w:${workspaceId}`, `a:${address}`];
    const [ofIntegration, ofWorkspace, ofAddress] = shares.map((key) => this.shares.get(key) ?? 0);
    if (
      streams.size >= this.limits.perSession ||
      ofIntegration! >= this.limits.perIntegration ||
      ofWorkspace! >= this.limits.perWorkspace ||
      ofAddress! >= this.limits.perAddress ||
      this.open >= this.limits.perProcess
    )
      return false;
    const stream: Stream = { res, lastSeq: afterSeq, pending: Promise.resolve() };
    streams.add(stream);
    this.sessions.set(sessionId, streams);
    for (const key of shares) this.shares.set(key, (this.shares.get(key) ?? 0) + 1);
    this.open++;
    res.on('close', () => {
      streams.delete(stream);
      this.open--;
      if (streams.size === 0) this.sessions.delete(sessionId);
      for (const key of shares) {
        const left = this.shares.get(key)! - 1;
        if (left === 0) this.shares.delete(key);
        else this.shares.set(key, left);
      }
    });
    this.read(sessionId, stream);
    return true;
  }

  /** A session has a new message: its streams here send what they have not sent. */
  wake(sessionId: string): void {
    for (const stream of this.sessions.get(sessionId) ?? []) this.read(sessionId, stream);
  }

  start(): void {
    this.sweeper = setInterval(() => void this.sweep(), this.limits.sweepMs);
    this.sweeper.unref();
  }

  /**
   * Keeps every stream alive and sends what a lost notice did not announce. Every session's streams are
   * read together, `sweepSessions` sessions a statement; a sweep still under way when the next is due
   * lets that one pass, so a slow database never has sweeps piling up on it.
   */
  async sweep(): Promise<void> {
    if (this.sweeping) return;
    this.sweeping = true;
    try {
      let after = new Map<string, bigint>();
      for (const [sessionId, streams] of this.sessions) {
        let from: bigint | undefined;
        for (const stream of streams) {
          // A stream whose buffer is full is waiting to drain, or to be ended: nothing more for it.
          if (stream.res.writableNeedDrain || ended(stream.res)) continue;
          // Keep-alives alone can fill the buffer of a client that reads nothing: it then gets `drainMs`.
          if (!stream.res.write(': keep-alive\n\n')) void this.drained(stream.res);
          if (from === undefined || stream.lastSeq < from) from = stream.lastSeq;
        }
        if (from === undefined) continue;
        after.set(sessionId, from);
        if (after.size === sweepSessions) {
          await this.readTogether(after);
          after = new Map();
        }
      }
      await this.readTogether(after);
    } catch (error) {
      this.logger.warn({ err: error }, 'live chat sweep failed');
    } finally {
      this.sweeping = false;
    }
  }

  private async readTogether(after: Map<string, bigint>): Promise<void> {
    const found = await this.store.messagesAfterEach(after);
    for (const [sessionId, page] of found)
      for (const stream of this.sessions.get(sessionId) ?? [])
        this.read(sessionId, stream, { ...page, from: after.get(sessionId)! });
  }

  /** Ends every stream (the widgets reconnect elsewhere). */
  stop(): void {
    clearInterval(this.sweeper);
    for (const streams of this.sessions.values()) for (const stream of streams) stream.res.end();
  }

  /**
   * Sends the stream what it has not sent, starting from `known` if given: its session's messages after
   * `from`, read by the sweep. They serve a stream that has sent up to `from` at least (a read in between
   * may have sent some of them); one that has not (opened during the sweep, its first read failed) reads
   * for itself, so nothing before `from` is passed over. A read already waiting its turn takes this one
   * in, reading the store itself: a stream waiting to drain keeps one read queued, not one per wake-up.
   */
  private read(sessionId: string, stream: Stream, known?: Known): void {
    if (stream.queued) {
      stream.queued.known = undefined;
      return;
    }
    const queued: NonNullable<Stream['queued']> = { known };
    stream.queued = queued;
    stream.pending = stream.pending.then(() => this.catchUp(sessionId, stream, queued));
  }

  /**
   * Sends the stream its messages page by page, waiting for the socket to drain whenever its buffer is
   * full. A stream left unread for `drainMs` is ended.
   */
  private async catchUp(
    sessionId: string,
    stream: Stream,
    queued: NonNullable<Stream['queued']>,
  ): Promise<void> {
    stream.queued = undefined;
    try {
      for (;;) {
        if (ended(stream.res)) return;
        const written = await this.writePage(sessionId, stream, queued);
        if (written === 'caught up') return;
        if (written === 'full' && !(await this.drained(stream.res))) return;
      }
    } catch (error) {
      this.logger.warn({ err: error, session_id: sessionId }, 'live chat stream read failed');
    }
  }

  /**
   * Writes the next page, the sweep's (once) or one read from the store, until the socket's buffer is
   * full. What it did not write is dropped when it returns, and read again after the drain: a stream
   * waiting for its client holds its buffer, not a page of messages.
   */
  private async writePage(
    sessionId: string,
    stream: Stream,
    queued: NonNullable<Stream['queued']>,
  ): Promise<'caught up' | 'full' | 'more'> {
    const known = queued.known;
    queued.known = undefined;
    const page: MessagePage =
      known && stream.lastSeq >= known.from
        ? {
            messages: known.messages.filter((message) => BigInt(message.seq) > stream.lastSeq),
            more: known.more,
          }
        : await this.store.messagesAfter(sessionId, stream.lastSeq);
    for (const message of page.messages) {
      // Ended meanwhile (the process stopping ends every stream while reads are under way).
      if (ended(stream.res)) return 'caught up';
      const flowing = stream.res.write(sseEvent(message));
      stream.lastSeq = BigInt(message.seq);
      if (!flowing) return 'full';
    }
    return page.more ? 'more' : 'caught up';
  }

  private async drained(res: Response): Promise<boolean> {
    if (res.destroyed) return false;
    const drained = await new Promise<boolean>((resolve) => {
      const finish = (outcome: boolean) => {
        clearTimeout(timer);
        res.off('drain', onDrain);
        res.off('close', onClose);
        resolve(outcome);
      };
      const onDrain = () => finish(true);
      const onClose = () => finish(false);
      const timer = setTimeout(() => finish(false), this.limits.drainMs);
      res.on('drain', onDrain);
      res.on('close', onClose);
    });
    if (!drained && !res.destroyed) res.destroy();
    return drained;
  }
}
