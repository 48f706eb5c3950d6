import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { createPool, migrate, type Pool } from '@inbox/db';
import { createDatabase } from '@inbox/testkit';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ConversationStore } from '../src/store/conversations.js';

let pool: Pool;

beforeAll(async () => {
  const databaseUrl = await createDatabase(inject('infra').postgresAdminUrl);
  pool = createPool({ url: databaseUrl, schema: 'messaging' });
  await migrate(pool, {
    schema: 'messaging',
    directory: fileURLToPath(new URL('../migrations', import.meta.url)),
    outbox: true,
  });
});
afterAll(async () => {
  await pool?.end();
});

describe('a send to a phone, stored in one statement', () => {
  const integration = { id: randomUUID(), channel: 'alt-a' as const, provider: 'chat' as const };
  const send = (store: ConversationStore, name: string | null, text: string) =>
    store.addOutboundToPhone('+5511933330001', name, integration, { text, senderType: 'agent' });

  it('creates contact and conversation once, keeps or replaces the name, and reopens as the domain says', async () => {
    const store = new ConversationStore(pool, randomUUID());
    const first = await send(store, 'Ana', 'um');
    expect(first.contact).toMatchObject({ created: true, contact: { phone: '+5511933330001', name: 'Ana' } });
    expect(first.conversation).toMatchObject({ created: true, conversation: { status: 'open' } });

    const second = await send(store, null, 'dois');
    expect(second.contact).toEqual({ ...first.contact, created: false });
    expect(second.conversation).toEqual({ ...first.conversation, created: false });

    // Resolved with an assignee: a new message reopens it as assigned.
    const conversationId = first.conversation.conversation.id;
    await pool.query(
      `update conversations set status = 'resolved', assigned_to_type = 'human', assigned_to_id = $2 where id = $1`,
      [conversationId, randomUUID()],
    );
    const third = await send(store, 'Ana Maria', 'três');
    expect(third.contact.contact.name).toBe('Ana Maria');
    expect(third.conversation.conversation).toMatchObject({ id: conversationId, status: 'assigned' });
    // Resolved without one: open.
    await pool.query(
      `update conversations set status = 'resolved', assigned_to_type = null, assigned_to_id = null where id = $1`,
      [conversationId],
    );
    expect((await send(store, null, 'quatro')).conversation.conversation.status).toBe('open');

    const { rows } = await pool.query<{ text: string; status: string; first_answer: unknown }>(
      'select text, status, first_answer from messages where conversation_id = $1 order by created_at',
      [conversationId],
    );
    expect(rows).toEqual([
      { text: 'um', status: 'pending', first_answer: { contactCreated: true, conversationCreated: true } },
      {
        text: 'dois',
        status: 'pending',
        first_answer: { contactCreated: false, conversationCreated: false },
      },
      {
        text: 'três',
        status: 'pending',
        first_answer: { contactCreated: false, conversationCreated: false },
      },
      {
        text: 'quatro',
        status: 'pending',
        first_answer: { contactCreated: false, conversationCreated: false },
      },
    ]);
  });

  it('creates one contact and one conversation when first sends race', async () => {
    const store = new ConversationStore(pool, randomUUID());
    const sends = await Promise.all(Array.from({ length: 6 }, (_, i) => send(store, null, `corrida ${i}`)));
    expect(new Set(sends.map((s) => s.contact.contact.id)).size).toBe(1);
    expect(new Set(sends.map((s) => s.conversation.conversation.id)).size).toBe(1);
    expect(sends.filter((s) => s.contact.created)).toHaveLength(1);
    expect(sends.filter((s) => s.conversation.created)).toHaveLength(1);
  });
});
