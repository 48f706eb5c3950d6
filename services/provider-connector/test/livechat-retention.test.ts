import { randomUUID } from 'node:crypto';
import type { Pool } from '@inbox/db';
import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import {
  livechatRetentionMs,
  pruneLivechat,
  pruneLivechatMessages,
  pruneLivechatSessions,
} from '../src/livechat/retention.js';
import { LivechatStore, sessionIdleMs } from '../src/livechat/store.js';
import { migratedPool } from './support.js';

// A live chat session ends a month after its last message, and the pruner deletes it and every message
// past the retention a day later, in bounded statements.

let pool: Pool;
let store: LivechatStore;
let integrationId: string;
const day = 86_400_000;

beforeAll(async () => {
  pool = await migratedPool();
  store = new LivechatStore(pool);
});
afterAll(async () => {
  await pool?.end();
});

beforeEach(async () => {
  await pool.query('delete from livechat_sessions');
  integrationId = randomUUID();
  await pool.query(
    `insert into integrations (id, workspace_id, channel, provider, status, config_sealed, account_id)
     values ($1, $2, 'livechat', 'livechat', 'connected', 'sealed', $3)`,
    [integrationId, randomUUID(), integrationId],
  );
});

/** A session opened `ageMs` ago, with messages written at the ages given (oldest first); its id and token. */
async function sessionAged(ageMs: number, messageAgesMs: number[] = []) {
  const { session, token } = await store.createSession(integrationId, 'Ana', 'https://shop.example');
  await pool.query(
    `update livechat_sessions set created_at = now() - $2 * interval '1 millisecond' where id = $1`,
    [session.id, ageMs],
  );
  for (const age of messageAgesMs) await messageAged(session.id, age);
  return { id: session.id, token };
}

/** A message written `ageMs` ago. Written in the order of their times, as they are. */
async function messageAged(sessionId: string, ageMs: number) {
  const id = randomUUID();
  expect(await store.addMessage(pool, sessionId, { id, author: 'visitor', text: 'oi' })).toBe(true);
  await pool.query(
    `update livechat_messages set created_at = now() - $2 * interval '1 millisecond' where id = $1`,
    [id, ageMs],
  );
}

const remaining = async () =>
  (
    await pool.query<{ session_id: string; n: number }>(
      `select s.id as session_id, count(m.seq)::int as n from livechat_sessions s
         left join livechat_messages m on m.session_id = s.id group by s.id`,
    )
  ).rows;

it("refuses a session's token a month after its last message, whoever wrote it", async () => {
  const quiet = await sessionAged(sessionIdleMs + day, [sessionIdleMs + day / 2]);
  const unused = await sessionAged(sessionIdleMs + 1_000);
  const talking = await sessionAged(sessionIdleMs * 3, [sessionIdleMs * 2, day]);
  const fresh = await sessionAged(0);
  const live = async (session: { id: string; token: string }) =>
    Boolean(await store.sessionByToken(integrationId, session.token)) &&
    Boolean(await store.session(integrationId, session.id));
  expect(await live(quiet)).toBe(false);
  expect(await live(unused)).toBe(false);
  expect(await live(talking)).toBe(true);
  expect(await live(fresh)).toBe(true);
});

it('deletes messages past the retention a batch at a time, and then the sessions left with none', async () => {
  const old = livechatRetentionMs + 60_000;
  const gone = await sessionAged(old + day);
  const emptied = await sessionAged(old);
  // Opened long ago, written to since: its old messages go, the session and its newer one stay.
  const long = await sessionAged(old * 2);
  await messageAged(long.id, old * 2 - 1);
  for (const age of [old + 3, old + 2, old + 1]) await messageAged(gone.id, age);
  await messageAged(long.id, old);
  const young = await sessionAged(day, [day / 2]);
  await messageAged(long.id, day / 4);

  expect(await pruneLivechatMessages(pool, { batchSize: 2 })).toBe(5);
  expect(await pruneLivechatSessions(pool, { batchSize: 1 })).toBe(2);
  const left = new Map((await remaining()).map((row) => [row.session_id, row.n]));
  expect(left).toEqual(
    new Map([
      [young.id, 1],
      [long.id, 1],
    ]),
  );
  expect(left.has(gone.id) || left.has(emptied.id)).toBe(false);
  // A second run finds nothing.
  expect(await pruneLivechat(pool)).toEqual({ messages: 0, sessions: 0 });
});

it('passes over sessions still written to, looking at each once a run', async () => {
  const old = livechatRetentionMs + 60_000;
  const kept = [];
  for (let i = 0; i < 5; i++) kept.push(await sessionAged(old + i * 1_000, [day]));
  const gone = await sessionAged(old + 10_000);
  const statements: string[] = [];
  const counting = {
    query: (text: string, values: unknown[]) => {
      statements.push(text);
      return pool.query(text, values);
    },
  } as unknown as Pool;
  expect(await pruneLivechatSessions(counting, { batchSize: 2 })).toBe(1);
  // Six sessions past the retention, two a statement: three statements and one that finds none.
  expect(statements).toHaveLength(4);
  expect((await remaining()).map((row) => row.session_id).sort()).toEqual(kept.map((s) => s.id).sort());
  expect(await store.session(integrationId, gone.id)).toBeUndefined();
});

it('adds nothing to a session pruned since it was looked up, and says so', async () => {
  const session = await sessionAged(0);
  await pool.query('delete from livechat_sessions where id = $1', [session.id]);
  expect(await store.addMessage(pool, session.id, { id: randomUUID(), author: 'operator', text: 'oi' })).toBe(
    false,
  );
  const { rows } = await pool.query('select 1 from livechat_messages where session_id = $1', [session.id]);
  expect(rows).toHaveLength(0);
});
