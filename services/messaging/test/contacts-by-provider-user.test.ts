import { randomUUID } from 'node:crypto';
import type { InboundMessageEvent } from '@inbox/contracts';
import { type OutboxRelay, type Pool, withTransaction } from '@inbox/db';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { receiveMessage } from '../src/handlers/inbound.js';
import { ConversationStore } from '../src/store/conversations.js';
import { idleRelay, migratedPool } from './support.js';

// Channels without phone numbers (the bot channel, Telegram) key their contacts by the provider's user id.

let pool: Pool;
let relay: OutboxRelay;

beforeAll(async () => {
  pool = await migratedPool();
  // Not started: the events stay in the outbox, where the test reads them.
  relay = idleRelay(pool);
});
afterAll(async () => {
  await pool?.end();
});

function telegramMessage(workspaceId: string, integrationId: string, id: string, name: string | null) {
  return {
    workspace_id: workspaceId,
    integration: { id: integrationId, channel: 'bot', provider: 'bot' },
    provider_message_id: `424242:${id}`,
    from: null,
    from_user_id: '424242',
    name,
    text: `mensagem ${id}`,
    type: 'text',
    sent_at: new Date().toISOString(),
  } satisfies InboundMessageEvent;
}

async function received(workspaceId: string) {
  const { rows } = await pool.query<{ data: { contact: unknown; conversation_id: string } }>(
    `select data from outbox where workspace_id = $1 and type = 'message.received' order by seq`,
    [workspaceId],
  );
  return rows.map((row) => row.data);
}

describe('contacts keyed by the provider user id', () => {
  it('takes a Telegram user in as one contact without a phone, named as Telegram names them', async () => {
    const workspaceId = randomUUID();
    const integrationId = randomUUID();
    await receiveMessage({ pool, relay }, telegramMessage(workspaceId, integrationId, '1', 'Joana Prado'));
    // Another name later does not replace the first, as for a phone contact's profile name.
    await receiveMessage({ pool, relay }, telegramMessage(workspaceId, integrationId, '2', 'Jo'));
    const events = await received(workspaceId);
    expect(events).toHaveLength(2);
    expect(events[0]!.contact).toEqual({ id: expect.any(String), phone: null, name: 'Joana Prado' });
    expect(events[1]!.contact).toEqual(events[0]!.contact);
    expect(events[1]!.conversation_id).toBe(events[0]!.conversation_id);

    const recipient = await withTransaction(pool, (client) =>
      new ConversationStore(client, workspaceId).conversationForSend(events[0]!.conversation_id),
    );
    expect(recipient).toMatchObject({ phone: null, provider_user_id: '424242', provider: 'bot' });
  });

  it('takes a WhatsApp customer who hides their number behind a username into the contact and conversation their number had', async () => {
    const workspaceId = randomUUID();
    const integration = { id: randomUUID(), channel: 'chat-official', provider: 'chat-official' } as const;
    const whatsapp = (id: string, from: string | null, userId: string) =>
      ({
        workspace_id: workspaceId,
        integration,
        provider_message_id: `wamid.${id}`,
        from,
        from_user_id: userId,
        name: 'Bia',
        text: `mensagem ${id}`,
        type: 'text',
        sent_at: new Date().toISOString(),
      }) satisfies InboundMessageEvent;
    // Named by number, with the business-scoped user id Meta sends beside it; then by that id alone.
    await receiveMessage({ pool, relay }, whatsapp('1', '+5511944440051', 'BR.1502576394655843'));
    await receiveMessage({ pool, relay }, whatsapp('2', null, 'BR.1502576394655843'));
    const events = await received(workspaceId);
    expect(events).toHaveLength(2);
    expect(events[0]!.contact).toEqual({ id: expect.any(String), phone: '+5511944440051', name: 'Bia' });
    expect(events[1]!.contact).toEqual(events[0]!.contact);
    expect(events[1]!.conversation_id).toBe(events[0]!.conversation_id);
    // A reply still goes to the number.
    const recipient = await withTransaction(pool, (client) =>
      new ConversationStore(client, workspaceId).conversationForSend(events[0]!.conversation_id),
    );
    expect(recipient).toMatchObject({ phone: '+5511944440051' });

    // A customer first seen by the id alone keeps that contact's conversation as it was; once a message
    // names them by number too, the number's contact is theirs, the id's later messages with it.
    await receiveMessage({ pool, relay }, whatsapp('3', null, 'BR.1502576394655999'));
    await receiveMessage({ pool, relay }, whatsapp('4', '+5511944440052', 'BR.1502576394655999'));
    await receiveMessage({ pool, relay }, whatsapp('5', null, 'BR.1502576394655999'));
    const [, , hidden, shown, hiddenAgain] = await received(workspaceId);
    expect(hidden!.contact).toMatchObject({ phone: null });
    expect(shown!.contact).toMatchObject({ phone: '+5511944440052' });
    expect(hiddenAgain!.contact).toEqual(shown!.contact);
    expect(hiddenAgain!.conversation_id).toBe(shown!.conversation_id);

    // One contact, several ids: another channel's, or another business portfolio's BSUID; an id noted on
    // one number's contact stays there when another number names it.
    const lid = {
      ...whatsapp('6', '+5511944440051', '103899771998284@lid'),
      integration: { id: randomUUID(), channel: 'alt-a', provider: 'chat' },
    } satisfies InboundMessageEvent;
    await receiveMessage({ pool, relay }, lid);
    await receiveMessage({ pool, relay }, { ...lid, provider_message_id: 'lid-7', from: null });
    await receiveMessage({ pool, relay }, whatsapp('8', '+5511944440053', 'BR.1502576394655843'));
    await receiveMessage({ pool, relay }, whatsapp('9', null, 'BR.1502576394655843'));
    const [, , , , , byNumber, byLid, other, byBsuid] = await received(workspaceId);
    expect(byNumber!.contact).toEqual(events[0]!.contact);
    expect(byLid!.contact).toEqual(events[0]!.contact);
    expect(byLid!.conversation_id).toBe(byNumber!.conversation_id);
    expect(other!.contact).toMatchObject({ phone: '+5511944440053' });
    expect(byBsuid!.contact).toEqual(events[0]!.contact);
  });

  it('keeps phone contacts apart from user-keyed ones, and refuses a contact with neither key', async () => {
    const workspaceId = randomUUID();
    await withTransaction(pool, async (client) => {
      const store = new ConversationStore(client, workspaceId);
      const byPhone = await store.upsertContact('+5511944440001', 'Dora');
      const byUser = await store.upsertUserContact('bot', '5511944440001', 'Dora');
      expect(byUser.contact.id).not.toBe(byPhone.contact.id);
      expect(byUser.contact.phone).toBeNull();
    });
    await expect(
      pool.query('insert into contacts (id, workspace_id, name) values ($1, $2, $3)', [
        randomUUID(),
        workspaceId,
        'nobody',
      ]),
    ).rejects.toThrow(/contacts_have_a_key/);
  });
});
