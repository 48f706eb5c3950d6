import { randomUUID } from 'node:crypto';
import type { InboundMessageEvent } from '@inbox/contracts';
import type { OutboxRelay, Pool } from '@inbox/db';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { receiveMessage } from '../src/handlers/inbound.js';
import { ConversationStore } from '../src/store/conversations.js';
import { idleRelay, migratedPool } from './support.js';

// Numbers WhatsApp names in a form other than the one written: a Brazilian mobile without its ninth digit
// and a Mexican one with its 1 are written in one form (canonicalPhone), and a contact stored in the other
// goes on taking its customer's messages and the API's sends; an Argentine number with and without its 9
// is one contact, in whichever form it was first stored.

let pool: Pool;
let relay: OutboxRelay;

beforeAll(async () => {
  pool = await migratedPool();
  relay = idleRelay(pool);
});
afterAll(async () => {
  await pool?.end();
});

const inbound = (workspaceId: string, from: string): InboundMessageEvent => ({
  workspace_id: workspaceId,
  integration: { id: randomUUID(), channel: 'alt-a', provider: 'chat' },
  provider_message_id: randomUUID(),
  from,
  name: null,
  text: 'oi',
  type: 'text',
  sent_at: new Date().toISOString(),
});

const contactsOf = async (workspaceId: string) =>
  (
    await pool.query<{ id: string; phone: string }>(
      'select id, phone from contacts where workspace_id = $1 order by phone',
      [workspaceId],
    )
  ).rows;

it('writes a new Brazilian mobile with its nine, whichever form a callback or the API names it by', async () => {
  const workspaceId = randomUUID();
  await receiveMessage({ pool, relay }, inbound(workspaceId, '+553188887777'));
  const store = new ConversationStore(pool, workspaceId);
  expect(await contactsOf(workspaceId)).toEqual([{ id: expect.any(String), phone: '+5531988887777' }]);
  expect(await store.storedPhone('+5531988887777')).toBe('+5531988887777');
  // A landline has no other form, and costs no lookup.
  expect(await store.storedPhone('+553133334444')).toBe('+553133334444');
});

it('keeps sending to and taking in a contact stored without its nine, and prefers the form with it', async () => {
  const workspaceId = randomUUID();
  const legacy = randomUUID();
  await pool.query('insert into contacts (id, workspace_id, phone) values ($1, $2, $3)', [
    legacy,
    workspaceId,
    '+553188887777',
  ]);
  const store = new ConversationStore(pool, workspaceId);
  expect(await store.storedPhone('+5531988887777')).toBe('+553188887777');
  await receiveMessage({ pool, relay }, inbound(workspaceId, '+553188887777'));
  expect(await contactsOf(workspaceId)).toEqual([{ id: legacy, phone: '+553188887777' }]);
  // Where the workspace holds both (the API wrote to one, the customer answered as the other), the form
  // with the nine is the one the API began the conversation in.
  await pool.query('insert into contacts (id, workspace_id, phone) values ($1, $2, $3)', [
    randomUUID(),
    workspaceId,
    '+5531988887777',
  ]);
  expect(await store.storedPhone('+5531988887777')).toBe('+5531988887777');
});

it('writes a Mexican number without the 1 WhatsApp names it by, and finds a contact stored with it', async () => {
  const workspaceId = randomUUID();
  await receiveMessage({ pool, relay }, inbound(workspaceId, '+5215512345678'));
  const [contact] = await contactsOf(workspaceId);
  expect(contact?.phone).toBe('+525512345678');
  const store = new ConversationStore(pool, workspaceId);
  expect(await store.storedPhone('+525512345678')).toBe('+525512345678');

  const earlier = randomUUID();
  await pool.query('insert into contacts (id, workspace_id, phone) values ($1, $2, $3)', [
    randomUUID(),
    earlier,
    '+5213312345678',
  ]);
  expect(await new ConversationStore(pool, earlier).storedPhone('+523312345678')).toBe('+5213312345678');
  await receiveMessage({ pool, relay }, inbound(earlier, '+5213312345678'));
  expect((await contactsOf(earlier)).map((row) => row.phone)).toEqual(['+5213312345678']);
});

it('takes an Argentine mobile with its 9 and without it as one contact, in the form first stored', async () => {
  const workspaceId = randomUUID();
  const written = randomUUID();
  // The API wrote to +54 11 2345-6789; WhatsApp names the customer 5491123456789.
  await pool.query('insert into contacts (id, workspace_id, phone) values ($1, $2, $3)', [
    written,
    workspaceId,
    '+541123456789',
  ]);
  await receiveMessage({ pool, relay }, inbound(workspaceId, '+5491123456789'));
  expect(await contactsOf(workspaceId)).toEqual([{ id: written, phone: '+541123456789' }]);
  const store = new ConversationStore(pool, workspaceId);
  expect(await store.storedPhone('+5491123456789')).toBe('+541123456789');

  // The other way round: a customer who wrote first, then the API writing without the 9.
  const other = randomUUID();
  await receiveMessage({ pool, relay }, inbound(other, '+5493514567890'));
  expect(await new ConversationStore(pool, other).storedPhone('+543514567890')).toBe('+5493514567890');

  // Where a workspace holds both forms, each finds its own.
  await pool.query('insert into contacts (id, workspace_id, phone) values ($1, $2, $3)', [
    randomUUID(),
    workspaceId,
    '+5491123456789',
  ]);
  expect(await store.storedPhone('+5491123456789')).toBe('+5491123456789');
  expect(await store.storedPhone('+541123456789')).toBe('+541123456789');
});
