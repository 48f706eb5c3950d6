import { randomUUID } from 'node:crypto';
import type { Pool, Queryable } from '@inbox/db';
import { newSessionToken, tokenDigest } from './session-token.js';

/**
 * How long a session lives after its last message, the visitor's or an operator's (or after it was
 * opened, while it has none): past it the token is refused and no operator's send reaches it, and the
 * pruner deletes it a day later (retention.ts). The widget keeps its session for as long as its tab.
 */
export const sessionIdleMs = 30 * 86_400_000;

/**
 * The session `alias` is live: opened, or written to, within `idleMs`. Its last message is found at the
 * end of its index, one probe whatever the session holds.
 */
const live = (alias: string, idleMs: string) => `greatest(${alias}.created_at,
    (select m.created_at from livechat_messages m where m.session_id = ${alias}.id order by m.seq desc limit 1))
    > now() - ${idleMs} * interval '1 millisecond'`;

export interface LivechatSession {
  id: string;
  integration_id: string;
  visitor_name: string;
  origin: string;
}

export interface LivechatMessage {
  seq: string;
  id: string;
  author: 'visitor' | 'operator';
  text: string;
  created_at: Date;
}

/**
 * Most messages one stream read sends, and the bytes of text before its last message: a message is
 * read while the text before it is under the budget (so the first always is), and a longer backlog
 * follows on the next read. By bytes too, as a message's text may be 16 KiB of
 * UTF-8: two hundred of them made 3 MiB a stream held while its client read nothing. A stream writes a
 * page until its socket's buffer (16 KiB) is full, and reads again after the drain: a larger page would
 * be read mostly to be dropped.
 */
export const replayPage = { messages: 200, bytes: 32 * 1024 } as const;

/**
 * Most messages of one session the sweep reads, and the bytes of text before its last: it finds what a
 * lost notice left behind, a few messages (a session may post 20 in 30 s), and a longer backlog is the
 * stream's own to read. Its statement's answer stays small whatever the sessions hold.
 */
export const sweepPage = { messages: 20, bytes: 16 * 1024 } as const;

/** Messages of one session in seq order, and whether more followed them when they were read. */
export interface MessagePage {
  messages: LivechatMessage[];
  more: boolean;
}

/**
 * A session's messages after `after`, oldest first, up to $n messages and $bytes of text: a message is
 * kept while the text before it is under the budget, so the first always is. One row more is read, its
 * text left out, to tell whether more follow: `kept` false.
 */
const pageOf = (session: string, after: string, n: string, bytes: string) => `
  select seq, id, author, case when kept then text end as text, created_at, kept from (
    select m.seq, m.id, m.author, m.text, m.created_at,
           row_number() over running <= ${n}
             and sum(octet_length(m.text)) over running - octet_length(m.text) < ${bytes} as kept
      from livechat_messages m
     where m.session_id = ${session} and m.seq > ${after}
    window running as (order by m.seq rows between unbounded preceding and current row)
     order by m.seq limit ${n} + 1) page`;

type PageRow = LivechatMessage & { kept: boolean };

/** The page in the rows `pageOf` read: the kept ones, and whether any was not. */
function pageIn(rows: PageRow[]): MessagePage {
  const messages: LivechatMessage[] = [];
  for (const { kept, ...message } of rows) {
    if (!kept) return { messages, more: true };
    messages.push(message);
  }
  return { messages, more: false };
}

/** Live chat sessions and their messages, in the connector's schema. */
export class LivechatStore {
  constructor(readonly pool: Pool) {}

  async createSession(
    integrationId: string,
    visitorName: string,
    origin: string,
  ): Promise<{ session: LivechatSession; token: string }> {
    const { token, digest } = newSessionToken();
    const session = { id: randomUUID(), integration_id: integrationId, visitor_name: visitorName, origin };
    await this.pool.query(
      `insert into livechat_sessions (id, integration_id, token_sha256, visitor_name, origin)
       values ($1, $2, $3, $4, $5)`,
      [session.id, integrationId, digest, visitorName, origin],
    );
    return { session, token };
  }

  /** The live session (sessionIdleMs) the token opened for this integration. */
  async sessionByToken(integrationId: string, token: string): Promise<LivechatSession | undefined> {
    const { rows } = await this.pool.query<LivechatSession>(
      `select s.id, s.integration_id, s.visitor_name, s.origin from livechat_sessions s
        where s.token_sha256 = $1 and s.integration_id = $2 and ${live('s', '$3')}`,
      [tokenDigest(token), integrationId, sessionIdleMs],
    );
    return rows[0];
  }

  /** The live session (sessionIdleMs) of this integration with this id. */
  async session(integrationId: string, sessionId: string): Promise<LivechatSession | undefined> {
    const { rows } = await this.pool.query<LivechatSession>(
      `select s.id, s.integration_id, s.visitor_name, s.origin from livechat_sessions s
        where s.id = $1 and s.integration_id = $2 and ${live('s', '$3')}`,
      [sessionId, integrationId, sessionIdleMs],
    );
    return rows[0];
  }

  /**
   * Adds a message to the session; a repeated id (a resent operator message) adds nothing. The session's
   * row is locked first, until the transaction ends, so its messages take their seqs in the order they
   * commit: a stream that has sent seq 11 has never to go back for a 10 committed after it (a visitor's
   * line still in its transaction while an operator's committed), which it would never send. False when
   * the session is gone (pruned since it was looked up).
   */
  async addMessage(
    db: Queryable,
    sessionId: string,
    message: { id: string; author: LivechatMessage['author']; text: string },
  ): Promise<boolean> {
    const { rows } = await db.query<{ found: boolean }>(
      `with session as (select id from livechat_sessions where id = $2 for update),
       added as (
         insert into livechat_messages (id, session_id, author, text) select $1, id, $3, $4 from session
         on conflict (id) do nothing)
       select exists (select from session) as found`,
      [message.id, sessionId, message.author, message.text],
    );
    return rows[0]?.found === true;
  }

  /**
   * For each session, its messages after the seq given for it, oldest first, at most `sweepPage`: the
   * sweep's read of every open stream in one statement, where one per stream would put thousands of
   * statements every few seconds on the pool that sends and callbacks share (a tenant's visitors open
   * streams at will). Sessions with nothing new are absent from the answer.
   */
  async messagesAfterEach(after: ReadonlyMap<string, bigint>): Promise<Map<string, MessagePage>> {
    const found = new Map<string, MessagePage>();
    if (after.size === 0) return found;
    const { rows } = await this.pool.query<PageRow & { session_id: string }>(
      `select s.session_id, m.seq::text as seq, m.id, m.author, m.text, m.created_at, m.kept
         from unnest($1::uuid[], $2::bigint[]) as s (session_id, after_seq)
         cross join lateral (${pageOf('s.session_id', 's.after_seq', '$3', '$4')}) m
        order by s.session_id, m.seq`,
      [[...after.keys()], [...after.values()].map(String), sweepPage.messages, sweepPage.bytes],
    );
    const bySession = new Map<string, PageRow[]>();
    for (const { session_id, ...row } of rows) {
      const listed = bySession.get(session_id);
      if (listed) listed.push(row);
      else bySession.set(session_id, [row]);
    }
    for (const [sessionId, listed] of bySession) found.set(sessionId, pageIn(listed));
    return found;
  }

  /**
   * The session's messages after the one with this seq, oldest first, at most `replayPage`. The order is
   * the column's: a bare `seq` would name the text the select makes of it, and "1000" sorts before "999".
   */
  async messagesAfter(sessionId: string, afterSeq: bigint): Promise<MessagePage> {
    const { rows } = await this.pool.query<PageRow>(
      `select m.seq::text as seq, m.id, m.author, m.text, m.created_at, m.kept
         from (${pageOf('$1', '$2', '$3', '$4')}) m
        order by m.seq`,
      [sessionId, afterSeq.toString(), replayPage.messages, replayPage.bytes],
    );
    return pageIn(rows);
  }
}
