import type { Integration } from '@inbox/contracts';
import { type Pool, type Queryable, withTransaction } from '@inbox/db';
import { ConversationStore } from './conversations.js';

/** A message a request created, found again by that request's (scoped) Idempotency-Key. */
export interface KeyedMessage {
  id: string;
  workspace_id: string;
  status: 'pending' | 'sent' | 'failed';
  text: string;
  provider_message_id: string | null;
  sent_at: Date | null;
  conversation_id: string;
  contact_id: string;
  phone: string;
  integration_id: string;
  provider: Integration['provider'];
  first_answer: { contactCreated: boolean; conversationCreated: boolean } | null;
}

/** The message a request with this (scoped) Idempotency-Key created, with what a retry's answer needs. */
export async function messageOfKey(
  db: Queryable,
  workspaceId: string,
  key: string,
): Promise<KeyedMessage | undefined> {
  const { rows } = await db.query<KeyedMessage>(
    `select m.id, m.workspace_id, m.status, m.text, m.provider_message_id, m.sent_at, m.conversation_id,
            c.contact_id, ct.phone, c.integration_id, c.provider, m.first_answer
       from messages m
       join conversations c on c.id = m.conversation_id and c.workspace_id = m.workspace_id
       join contacts ct on ct.id = c.contact_id and ct.workspace_id = m.workspace_id
      where m.workspace_id = $1 and m.idempotency_key = $2`,
    [workspaceId, key],
  );
  return rows[0];
}

/** A refused send reached nobody: a retry of its request may try it again, as the same message. */
export async function retryIfRefused(
  pool: Pool,
  message: Pick<KeyedMessage, 'status' | 'workspace_id' | 'id'>,
) {
  if (message.status !== 'failed') return;
  await withTransaction(pool, (client) =>
    new ConversationStore(client, message.workspace_id).retryFailed(message.id),
  );
}

/** Postgres refused an insert for a unique constraint: here, a message with the same scoped key. */
export const isUniqueViolation = (error: unknown) => (error as { code?: string }).code === '23505';
