import { randomUUID } from 'node:crypto';
import type { InboundMessageEvent } from '@inbox/contracts';
import { type OutboxRelay, type Pool, withTransaction } from '@inbox/db';
import { waitFor } from '@inbox/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { receiveMessage } from '../src/handlers/inbound.js';
import { storeOutbound } from '../src/handlers/send-message.js';
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

describe('an Argentine line whose first two messages race, one in each form', () => {
  // Both forms are canonical, so the contacts' unique key cannot keep them one: the line's lock must.
  // Each round starts both at once on a workspace of its own; without the lock the two lookups both find
  // nothing and each form makes its own contact.
  const rounds = 8;
  const integration = {
    id: randomUUID(),
    channel: 'alt-a' as const,
    provider: 'chat' as const,
    name: null,
    status: 'connected' as const,
    status_reason: null,
    connected_at: null,
    created_at: new Date().toISOString(),
  };

  /** Whether a session of this database waits for an advisory lock. */
  const lineWaitedFor = async () =>
    (
      await pool.query(
        `select 1 from pg_locks where locktype = 'advisory' and not granted
            and database = (select oid from pg_database where datname = current_database())`,
      )
    ).rowCount! > 0;

  it('makes one contact of two first callbacks, with the 9 and without it', async () => {
    const workspaces = Array.from({ length: rounds }, () => randomUUID());
    await Promise.all(
      workspaces.flatMap((workspaceId) => [
        receiveMessage({ pool, relay }, inbound(workspaceId, '+5491123456789')),
        receiveMessage({ pool, relay }, inbound(workspaceId, '+541123456789')),
      ]),
    );
    for (const workspaceId of workspaces) expect(await contactsOf(workspaceId)).toHaveLength(1);
  });

  it("makes one contact of the API's first send without the 9 and a first reply with it still uncommitted", async () => {
    const workspaceId = randomUUID();
    let sending: Promise<unknown> | undefined;
    // The reply's transaction as receiveMessage runs it, held open after it stored its contact while the
    // send starts: the send must wait for the line, then find that contact.
    await withTransaction(pool, async (client) => {
      const store = new ConversationStore(client, workspaceId);
      await store.upsertContact(await store.lockedStoredPhone('+5491123456789'), null);
      let settled = false;
      sending = storeOutbound(
        { pool },
        { workspace: { id: workspaceId, default_country_code: '54' }, phone: '+541123456789' },
        integration,
        'hola',
      ).finally(() => {
        settled = true;
      });
      await waitFor(async () => settled || (await lineWaitedFor()), { what: 'the send to wait or end' });
    });
    await sending;
    const contacts = await contactsOf(workspaceId);
    expect(contacts.map((contact) => contact.phone)).toEqual(['+5491123456789']);
    const { rows } = await pool.query<{ contact_id: string }>(
      'select c.contact_id from messages m join conversations c on c.id = m.conversation_id where m.workspace_id = $1',
      [workspaceId],
    );
    expect(rows).toEqual([{ contact_id: contacts[0]!.id }]);
  });
});
