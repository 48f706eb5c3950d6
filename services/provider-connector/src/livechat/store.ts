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

  /** Adds a message to the session; a repeated id (a resent operator message) adds nothing. */
  async addMessage(
    db: Queryable,
    sessionId: string,
    message: { id: string; author: LivechatMessage['author']; text: string },
  ): Promise<void> {
    await db.query(
      `insert into livechat_messages (id, session_id, author, text) values ($1, $2, $3, $4)
       on conflict (id) do nothing`,
      [message.id, sessionId, message.author, message.text],
    );
  }

  /** The session's messages after the one with this seq, oldest first, at most `replayBatch`. */
  async messagesAfter(sessionId: string, afterSeq: bigint): Promise<LivechatMessage[]> {
    const { rows } = await this.pool.query<LivechatMessage>(
      `select seq::text as seq, id, author, text, created_at from livechat_messages
        where session_id = $1 and seq > $2 order by seq limit $3`,
      [sessionId, afterSeq.toString(), replayBatch],
    );
    return rows;
  }
}
