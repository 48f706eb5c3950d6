import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { createPool, migrate, type Pool } from '@inbox/db';
import { createDatabase, waitFor } from '@inbox/testkit';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { addRepliesIfAllowed, ConversationStore, type ReplyAllowance } from '../src/store/conversations.js';
import { Replies } from '../src/store/replies.js';
import { recordSent, SentMessages } from '../src/store/sent-messages.js';

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

describe('a reply into a conversation, read, checked and stored in one statement', () => {
  const integration = { id: randomUUID(), channel: 'alt-a' as const, provider: 'chat' as const };
  const anyone = { refusingProviders: [], windowedProviders: [], windowOpenAfter: new Date(0) };
  const reply = (text: string) => ({ text, senderType: 'agent' as const, senderName: 'Bia' });
  const messagesOf = async (conversationId: string) =>
    (
      await pool.query<{ text: string; sender_name: string }>(
        'select text, sender_name from messages where conversation_id = $1 order by created_at',
        [conversationId],
      )
    ).rows;

  async function conversation(store: ConversationStore) {
    const sent = await store.addOutboundToPhone('+5511933330002', 'Caio', integration, {
      text: 'primeira',
      senderType: 'agent',
    });
    return sent.conversation.conversation.id;
  }

  /** One reply alone through the statement a turn's replies share. */
  const addReply = async (
    workspaceId: string,
    conversationId: string,
    rules: ReplyAllowance,
    input: ReturnType<typeof reply>,
  ) => (await addRepliesIfAllowed(pool, [{ ...input, workspaceId, conversationId, rules }]))[0];

  it('stores the reply and reopens a resolved conversation as the domain says', async () => {
    const workspace = randomUUID();
    const id = await conversation(new ConversationStore(pool, workspace));
    await pool.query(`update conversations set status = 'resolved' where id = $1`, [id]);

    const stored = await addReply(workspace, id, anyone, reply('segunda'));
    expect(stored?.messageId).toEqual(expect.any(String));
    expect(stored?.conversation).toMatchObject({
      id,
      status: 'resolved',
      provider: 'chat',
      phone: '+5511933330002',
    });
    const { rows } = await pool.query('select status from conversations where id = $1', [id]);
    expect(rows[0].status).toBe('open');
    expect(await messagesOf(id)).toEqual([
      { text: 'primeira', sender_name: null },
      { text: 'segunda', sender_name: 'Bia' },
    ]);
  });

  it('writes nothing where the rules refuse the reply, and answers the conversation as read', async () => {
    const workspace = randomUUID();
    const id = await conversation(new ConversationStore(pool, workspace));
    await pool.query(`update conversations set status = 'resolved' where id = $1`, [id]);
    const refused = await addReply(
      workspace,
      id,
      { ...anyone, refusingProviders: ['social', 'chat'] },
      reply('recusada'),
    );
    expect(refused).toMatchObject({ messageId: undefined, conversation: { id, provider: 'chat' } });

    // Inside the window only: the contact last wrote an hour ago.
    const hourAgo = new Date(Date.now() - 3_600_000);
    await pool.query('update conversations set last_inbound_at = $2 where id = $1', [id, hourAgo]);
    const windowed = { ...anyone, windowedProviders: ['chat'] };
    const closed = await addReply(
      workspace,
      id,
      { ...windowed, windowOpenAfter: new Date(Date.now() - 60_000) },
      reply('fora da janela'),
    );
    expect(closed?.messageId).toBeUndefined();
    expect((await pool.query('select status from conversations where id = $1', [id])).rows[0].status).toBe(
      'resolved',
    );
    const open = await addReply(
      workspace,
      id,
      { ...windowed, windowOpenAfter: new Date(Date.now() - 86_400_000) },
      reply('dentro da janela'),
    );
    expect(open?.messageId).toEqual(expect.any(String));
    expect((await messagesOf(id)).map((m) => m.text)).toEqual(['primeira', 'dentro da janela']);
  });

  it('waits for a conversation being changed, and applies the rules to it as changed', async () => {
    const workspace = randomUUID();
    const id = await conversation(new ConversationStore(pool, workspace));
    // Another transaction assigns the conversation and holds its row until the statement below waits on it.
    const other = await pool.connect();
    try {
      await other.query('begin');
      await other.query(
        `update conversations set status = 'assigned', assigned_to_type = 'human', assigned_to_id = $2 where id = $1`,
        [id, randomUUID()],
      );
      const storing = addReply(workspace, id, anyone, reply('atrasada'));
      await waitFor(
        async () =>
          (
            await pool.query(
              `select 1 from pg_stat_activity
                where datname = current_database() and wait_event_type = 'Lock'
                  and query like '%v(id, workspace_id, conversation_id, sender_type%'`,
            )
          ).rowCount === 1,
        { what: 'the reply to wait on the row lock' },
      );
      await other.query('commit');
      const stored = await storing;
      // Read under its lock, so after the assignment: the rules see it assigned, and it stays assigned.
      expect(stored).toMatchObject({
        messageId: expect.any(String),
        conversation: { id, status: 'assigned' },
      });
    } finally {
      other.release();
    }
    expect((await messagesOf(id)).map((m) => m.text)).toEqual(['primeira', 'atrasada']);
    expect((await pool.query('select status from conversations where id = $1', [id])).rows[0].status).toBe(
      'assigned',
    );
  });

  it('finds no conversation of another workspace, and writes nothing into it', async () => {
    const owner = new ConversationStore(pool, randomUUID());
    const id = await conversation(owner);
    expect(await addReply(randomUUID(), id, anyone, reply('intrusa'))).toBeUndefined();
    expect((await messagesOf(id)).map((m) => m.text)).toEqual(['primeira']);
  });

  it('stores a turn’s replies in one statement, each answered as it would be alone', async () => {
    const workspace = randomUUID();
    const store = new ConversationStore(pool, workspace);
    const busy = await conversation(store);
    const resolved = (
      await store.addOutboundToPhone('+5511933330003', null, integration, {
        text: 'outra',
        senderType: 'agent',
      })
    ).conversation.conversation.id;
    const elsewhere = await conversation(new ConversationStore(pool, randomUUID()));
    await pool.query(`update conversations set status = 'resolved' where id = $1`, [resolved]);
    const replies = new Replies(pool);
    const add = (conversationId: string, text: string, rules: ReplyAllowance = anyone) =>
      replies.add({ ...reply(text), workspaceId: workspace, conversationId, rules });
    const answers = await Promise.all([
      add(busy, 'um'),
      add(resolved, 'dois'),
      add(busy, 'três'),
      add(busy, 'recusada', { ...anyone, refusingProviders: ['chat'] }),
      // Another workspace's conversation: not found, and nothing written into it.
      add(elsewhere, 'intrusa'),
    ]);
    expect(answers.map((answer) => answer && (answer.messageId ? 'stored' : 'refused'))).toEqual([
      'stored',
      'stored',
      'stored',
      'refused',
      undefined,
    ]);
    expect(answers[1]?.conversation).toMatchObject({ id: resolved, status: 'resolved' });
    // In the order given, reopened once, and all by one transaction.
    expect((await messagesOf(busy)).map((m) => m.text)).toEqual(['primeira', 'um', 'três']);
    expect((await messagesOf(elsewhere)).map((m) => m.text)).toEqual(['primeira']);
    const { rows } = await pool.query<{ status: string }>('select status from conversations where id = $1', [
      resolved,
    ]);
    expect(rows[0]?.status).toBe('open');
    const writers = await pool.query<{ xmin: string }>(
      'select distinct xmin::text from messages where id = any($1)',
      [answers.slice(0, 3).map((answer) => answer?.messageId)],
    );
    expect(writers.rows).toHaveLength(1);
  });

  it('runs a turn’s replies again one by one when one of them breaks the statement', async () => {
    const workspace = randomUUID();
    const id = await conversation(new ConversationStore(pool, workspace));
    const replies = new Replies(pool);
    const add = (text: string, idempotencyKey: string) =>
      replies.add({
        ...reply(text),
        workspaceId: workspace,
        conversationId: id,
        rules: anyone,
        idempotencyKey,
      });
    // Two requests with one key: run again each alone, at once, whichever comes first stores its reply
    // and the other alone hears of the key taken; the third is stored either way.
    const answers = await Promise.allSettled([add('a', 'k-1'), add('b', 'k-1'), add('c', 'k-2')]);
    const refused = answers.findIndex((answer) => answer.status === 'rejected');
    expect(answers.filter((answer) => answer.status === 'rejected')).toHaveLength(1);
    expect([0, 1]).toContain(refused);
    expect(answers[refused]).toMatchObject({ reason: { code: '23505' } });
    const kept = refused === 0 ? 'b' : 'a';
    expect((await messagesOf(id)).map((m) => m.text).sort()).toEqual([kept, 'c', 'primeira']);
  });
});

describe('sent messages recorded as their requests learn of them', () => {
  const integration = { id: randomUUID(), channel: 'alt-a' as const, provider: 'chat' as const };

  it('marks a turn’s messages sent in one statement, each with its message.sent numbered in turn', async () => {
    const workspaceId = randomUUID();
    const store = new ConversationStore(pool, workspaceId);
    const stored: Awaited<ReturnType<ConversationStore['addOutboundToPhone']>>[] = [];
    for (const text of ['um', 'dois', 'três'])
      stored.push(
        await store.addOutboundToPhone('+5511933330002', null, integration, { text, senderType: 'agent' }),
      );
    const conversationId = stored[0]!.conversation.conversation.id;
    const sent = (index: number) => ({
      workspaceId,
      conversationId,
      integration: { id: integration.id, provider: integration.provider },
      messageId: stored[index]!.messageId,
      // Text an array literal must escape: its events carry it whole.
      text: `texto ${index} "entre aspas", \\barra {chaves} NULL`,
      senderType: 'agent' as const,
      providerMessageId: `wamid.${index}`,
      sentAt: '2026-03-03T09:00:00.000Z',
    });
    const recorder = new SentMessages(pool);
    // Three answers in one turn, one of them twice: each message is marked once and announced once.
    await Promise.all([
      recorder.record(sent(2)),
      recorder.record(sent(0)),
      recorder.record(sent(1)),
      recorder.record(sent(0)),
    ]);
    const { rows: messages } = await pool.query<{ status: string; provider_message_id: string }>(
      'select status, provider_message_id from messages where conversation_id = $1 order by provider_message_id',
      [conversationId],
    );
    expect(messages).toEqual(
      [0, 1, 2].map((index) => ({ status: 'sent', provider_message_id: `wamid.${index}` })),
    );
    const { rows: events } = await pool.query<{ message: string; seq: string; txid: string }>(
      `select data -> 'message' ->> 'id' as message, ordering_seq as seq, txid::text from outbox
        where workspace_id = $1 and type = 'message.sent' order by seq`,
      [workspaceId],
    );
    expect(events.map((event) => event.message).sort()).toEqual(stored.map((s) => s.messageId).sort());
    const { rows: texts } = await pool.query<{ text: string }>(
      `select data -> 'message' ->> 'text' as text from outbox where workspace_id = $1 order by data -> 'message' ->> 'text'`,
      [workspaceId],
    );
    expect(texts.map((row) => row.text)).toEqual([0, 1, 2].map((index) => sent(index).text));
    expect(events.map((event) => Number(event.seq)).sort()).toEqual([1, 2, 3]);
    // One statement: all three written by one transaction.
    expect(new Set(events.map((event) => event.txid)).size).toBe(1);
    // A later answer for one of them (the reconciliation job's) changes nothing and announces nothing.
    await recordSent(pool, sent(1));
    const { rows: after } = await pool.query('select 1 from outbox where workspace_id = $1', [workspaceId]);
    expect(after).toHaveLength(3);
  });
});
