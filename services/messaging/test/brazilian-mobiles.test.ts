import { randomUUID } from 'node:crypto';
import type { InboundMessageEvent } from '@inbox/contracts';
import type { OutboxRelay, Pool } from '@inbox/db';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { receiveMessage } from '../src/handlers/inbound.js';
import { ConversationStore } from '../src/store/conversations.js';
import { idleRelay, migratedPool } from './support.js';

// A Brazilian mobile WhatsApp names without its ninth digit is written with it (canonicalPhone); a
// contact stored before that, without it, goes on taking its customer's messages and the API's sends.

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
