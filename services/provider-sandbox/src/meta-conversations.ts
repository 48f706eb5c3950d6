import type { Request, Router } from 'express';
import { GraphCode, GraphError } from './graph-error.js';

// Meta's Conversations API ("Conversations API for Messenger Platform"; the Graph API reference's Page
// Conversations, Conversation and Message): `GET /<account>/conversations?platform=` lists an account's
// conversations, the most recently updated first, each with the messages asked for through field
// expansion (`messages.limit(n){id,created_time,from,to,message}`). Meta keeps the messages whatever
// became of their webhooks: what an unsubscribed app was never posted is read here. Meta's rate limits
// (Messenger Platform, "Rate limits"): "Your app can make 2 calls per second per Facebook Page" on the
// Conversations API, and as many "per Instagram Professional account".

/** Graph's datetime: `2019-01-10T11:18:46+0000`, as the Conversations API's answers write it. */
export const graphTime = (at: number) => new Date(at).toISOString().replace(/\.\d{3}Z$/, '+0000');

/** A person or account as a message names it: Messenger gives a name and an email, Instagram a username. */
export type Party = { id: string; name?: string; email?: string; username?: string };

interface ThreadMessage {
  id: string;
  at: number;
  from: Party;
  to: Party;
  text: string;
}

interface Thread {
  id: string;
  updatedAt: number;
  /** Oldest first. */
  messages: ThreadMessage[];
}

/** "You can only get details about the 20 most recent messages in the conversation." */
const detailedMessages = 20;
const defaultLimit = 25;
const keptThreads = 1_000;
const maxLimit = 100;
const messageFields = ['id', 'created_time', 'from', 'to', 'message'] as const;
const conversationFields = ['id', 'updated_time', 'messages'] as const;
/** "2 calls per second per Facebook Page" (and per Instagram professional account). */
const callsPerSecond = 2;
/** Accounts whose last second of calls is remembered: the most recently called. */
const pacedAccounts = 10_000;

/** One field of a `fields` list: `messages.limit(5){id,message}` is messages, limit 5, two subfields. */
interface FieldAsked {
  name: string;
  limit?: number;
  fields?: FieldAsked[];
}

/** Graph's field expansion, as far as the Conversations API's answers need it. */
export function parseFields(text: string): FieldAsked[] {
  const asked: FieldAsked[] = [];
  let at = 0;
  const fail = () =>
    new GraphError(
      400,
      GraphCode.invalidParameter,
      `Syntax error "Expected end of string instead of "${text.slice(at, at + 1)}"." at character ${at}: ${text}`,
    );
  const parseList = (): FieldAsked[] => {
    const list: FieldAsked[] = [];
    for (;;) {
      const name = /^[a-z_]+/.exec(text.slice(at))?.[0];
      if (!name) throw fail();
      at += name.length;
      const field: FieldAsked = { name };
      const limit = /^\.limit\((\d+)\)/.exec(text.slice(at));
      if (limit) {
        field.limit = Number(limit[1]);
        at += limit[0].length;
      }
      if (text[at] === '{') {
        at++;
        field.fields = parseList();
        if (text[at] !== '}') throw fail();
        at++;
      }
      list.push(field);
      if (text[at] !== ',') return list;
      at++;
    }
  };
  if (text !== '') asked.push(...parseList());
  if (at !== text.length) throw fail();
  return asked;
}

const nonexisting = (field: string, node: string) =>
  new GraphError(
    400,
    GraphCode.invalidParameter,
    `Tried accessing nonexisting field (${field}) on node type (${node})`,
  );

/** Every conversation of every account of one product, as Meta keeps them. */
export class Conversations {
  private readonly threads = new Map<string, Map<string, Thread>>();
  private nextThread = 1;
  /** Per account, when the calls of the last second were answered (`performance.now()`). */
  private readonly recentCalls = new Map<string, number[]>();

  /** `throttle`: the product's rate-limit answer, Graph's error for a call over the account's pace. */
  constructor(
    private readonly platform: 'messenger' | 'instagram',
    private readonly throttle: { code: number; title: string },
  ) {}

  /**
   * A message between the account and a user, in their one conversation (made with the first). Only what
   * the API can give is kept (a conversation's 20 latest messages, an account's 1,000 latest
   * conversations), so a long run of sends holds the sandbox's memory still.
   */
  record(account: string, user: string, message: Omit<ThreadMessage, 'at'>, at = Date.now()): void {
    const byUser = this.threads.get(account) ?? new Map<string, Thread>();
    this.threads.set(account, byUser);
    const thread = byUser.get(user) ?? {
      id: `t_${account}_${this.nextThread++}`,
      updatedAt: at,
      messages: [],
    };
    // The most recently updated last, so the least recently updated goes first when there are too many.
    byUser.delete(user);
    byUser.set(user, thread);
    if (byUser.size > keptThreads) byUser.delete(byUser.keys().next().value!);
    thread.messages.push({ ...message, at });
    if (thread.messages.length > detailedMessages) thread.messages.shift();
    thread.updatedAt = at;
  }

  clear(): void {
    this.threads.clear();
    this.recentCalls.clear();
  }

  /**
   * Counts a call against the account's two a second, refusing it with the product's rate-limit error
   * when two were answered within the last second. A refused call is not counted: the next second's
   * call is answered.
   */
  private takeCall(account: string): void {
    const now = performance.now();
    const recent = (this.recentCalls.get(account) ?? []).filter((at) => at > now - 1_000);
    if (recent.length >= callsPerSecond) throw new GraphError(400, this.throttle.code, this.throttle.title);
    recent.push(now);
    this.recentCalls.delete(account);
    this.recentCalls.set(account, recent);
    if (this.recentCalls.size > pacedAccounts) this.recentCalls.delete(this.recentCalls.keys().next().value!);
  }

  /** `GET /<version>/<account>/conversations`, its account authorised by `authorise`. */
  route(router: Router, path: string, authorise: (req: Request<{ node: string }>) => string): void {
    router.get(path, (req: Request<{ node: string }>, res) => {
      const account = authorise(req);
      this.takeCall(account);
      const platform = req.query.platform;
      // A Page's Messenger conversations, or its Instagram account's: the sandbox's accounts have one.
      if (platform !== undefined && platform !== 'messenger' && platform !== 'instagram')
        throw new GraphError(
          400,
          GraphCode.invalidParameter,
          `param platform must be one of {INSTAGRAM, MESSENGER} - got "${String(platform)}".`,
        );
      const asked = parseFields(typeof req.query.fields === 'string' ? req.query.fields : 'id,updated_time');
      for (const field of asked)
        if (!(conversationFields as readonly string[]).includes(field.name))
          throw nonexisting(field.name, 'UnifiedThread');
      const limit = Math.min(Number(req.query.limit ?? defaultLimit) || defaultLimit, maxLimit);
      const offset = cursorOffset(req.query.after);
      // Kept least recently updated first (record), listed the most recently updated first.
      const threads =
        platform !== undefined && platform !== this.platform
          ? []
          : [...(this.threads.get(account)?.values() ?? [])].reverse();
      const page = threads.slice(offset, offset + limit);
      const data = page.map((thread) => this.threadNode(thread, asked));
      const paging =
        page.length === 0
          ? undefined
          : {
              cursors: { before: cursorOf(offset), after: cursorOf(offset + page.length) },
              ...(offset + page.length < threads.length
                ? { next: nextUrl(req, cursorOf(offset + page.length)) }
                : {}),
            };
      res.json(paging ? { data, paging } : { data });
    });
  }

  private threadNode(thread: Thread, asked: FieldAsked[]): Record<string, unknown> {
    const node: Record<string, unknown> = { id: thread.id };
    for (const field of asked) {
      if (field.name === 'updated_time') node.updated_time = graphTime(thread.updatedAt);
      if (field.name !== 'messages') continue;
      const fields = field.fields ?? [{ name: 'id' }, { name: 'created_time' }];
      for (const sub of fields)
        if (!(messageFields as readonly string[]).includes(sub.name)) throw nonexisting(sub.name, 'Message');
      // Newest first; details only for the 20 most recent.
      const limit = Math.min(field.limit ?? defaultLimit, detailedMessages);
      const messages = thread.messages.slice(-limit).reverse();
      node.messages = { data: messages.map((message) => messageNode(message, fields)) };
    }
    return node;
  }
}

function messageNode(message: ThreadMessage, fields: FieldAsked[]): Record<string, unknown> {
  const node: Record<string, unknown> = {};
  for (const { name } of fields) {
    if (name === 'id') node.id = message.id;
    if (name === 'created_time') node.created_time = graphTime(message.at);
    if (name === 'from') node.from = message.from;
    if (name === 'to') node.to = { data: [message.to] };
    // "If no text is part of the message, this will be empty."
    if (name === 'message') node.message = message.text;
  }
  return node;
}

const cursorOf = (offset: number) => Buffer.from(`offset:${offset}`).toString('base64url');

function cursorOffset(cursor: unknown): number {
  if (typeof cursor !== 'string') return 0;
  const offset = /^offset:(\d+)$/.exec(Buffer.from(cursor, 'base64url').toString())?.[1];
  if (offset === undefined) throw new GraphError(400, GraphCode.invalidParameter, 'Invalid cursor');
  return Number(offset);
}

/** The same request's URL with `after` set: Graph's `paging.next`. */
function nextUrl(req: Request, after: string): string {
  const url = new URL(`${req.protocol}://${req.get('host')}${req.originalUrl}`);
  url.searchParams.set('after', after);
  return url.href;
}
