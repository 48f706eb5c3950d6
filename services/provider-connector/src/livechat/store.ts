import { randomUUID } from 'node:crypto';
import type { Pool, Queryable } from '@inbox/db';
import { newSessionToken, tokenDigest } from './session-token.js';

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

/** Most messages one stream read sends; a longer backlog follows on the next read. */
export const replayBatch = 200;

/**
 * Most messages of one session the sweep reads: it finds what a lost notice left behind, a few messages
 * (a session may post 20 in 30 s), and a longer backlog is the stream's own to read. Its statement's
 * answer stays small whatever the sessions hold.
 */
export const sweepBatch = 20;

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

  async sessionByToken(integrationId: string, token: string): Promise<LivechatSession | undefined> {
    const { rows } = await this.pool.query<LivechatSession>(
      `select id, integration_id, visitor_name, origin from livechat_sessions
        where token_sha256 = $1 and integration_id = $2`,
      [tokenDigest(token), integrationId],
    );
    return rows[0];
  }

  async session(integrationId: string, sessionId: string): Promise<LivechatSession | undefined> {
    const { rows } = await this.pool.query<LivechatSession>(
      `select id, integration_id, visitor_name, origin from livechat_sessions
        where id = $1 and integration_id = $2`,
      [sessionId, integrationId],
    );
    return rows[0];
  }

  /**
   * Adds a message to the session; a repeated id (a resent operator message) adds nothing. The session's
   * row is locked first, until the transaction ends, so its messages take their seqs in the order they
   * commit: a stream that has sent seq 11 has never to go back for a 10 committed after it (a visitor's
   * line still in its transaction while an operator's committed), which it would never send.
   */
  async addMessage(
    db: Queryable,
    sessionId: string,
    message: { id: string; author: LivechatMessage['author']; text: string },
  ): Promise<void> {
    await db.query(
      `with session as (select id from livechat_sessions where id = $2 for update)
       insert into livechat_messages (id, session_id, author, text) select $1, id, $3, $4 from session
       on conflict (id) do nothing`,
      [message.id, sessionId, message.author, message.text],
    );
  }

  /**
   * For each session, its messages after the seq given for it, oldest first, at most `sweepBatch`: the
   * sweep's read of every open stream in one statement, where one per stream would put thousands of
   * statements every few seconds on the pool that sends and callbacks share (a tenant's visitors open
   * streams at will). Sessions with nothing new are absent from the answer.
   */
  async messagesAfterEach(after: ReadonlyMap<string, bigint>): Promise<Map<string, LivechatMessage[]>> {
    const found = new Map<string, LivechatMessage[]>();
    if (after.size === 0) return found;
    const { rows } = await this.pool.query<LivechatMessage & { session_id: string }>(
      `select s.session_id, m.seq::text as seq, m.id, m.author, m.text, m.created_at
         from unnest($1::uuid[], $2::bigint[]) as s (session_id, after_seq)
         cross join lateral (
           select seq, id, author, text, created_at from livechat_messages
            where session_id = s.session_id and seq > s.after_seq order by seq limit $3) m
        order by s.session_id, m.seq`,
      [[...after.keys()], [...after.values()].map(String), sweepBatch],
    );
    for (const { session_id, ...message } of rows) {
      const messages = found.get(session_id);
      if (messages) messages.push(message);
      else found.set(session_id, [message]);
    }
    return found;
  }

  /**
   * The session's messages after the one with this seq, oldest first, at most `replayBatch`. The order is
   * the column's: a bare `seq` would name the text the select makes of it, and "1000" sorts before "999".
   */
  async messagesAfter(sessionId: string, afterSeq: bigint): Promise<LivechatMessage[]> {
    const { rows } = await this.pool.query<LivechatMessage>(
      `select m.seq::text as seq, m.id, m.author, m.text, m.created_at from livechat_messages m
        where m.session_id = $1 and m.seq > $2 order by m.seq limit $3`,
      [sessionId, afterSeq.toString(), replayBatch],
    );
    return rows;
  }
}
