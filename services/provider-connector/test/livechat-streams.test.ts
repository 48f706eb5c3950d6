import { randomUUID } from 'node:crypto';
import { createServer, type Server, type ServerResponse } from 'node:http';
import { type AddressInfo, connect } from 'node:net';
import type { Pool } from '@inbox/db';
import { createLogger } from '@inbox/service-kit';
import { waitFor } from '@inbox/testkit';
import type { Response } from 'express';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { LivechatStore, replayPage } from '../src/livechat/store.js';
import { LivechatStreams } from '../src/livechat/streams.js';
import { migratedPool } from './support.js';

let pool: Pool;
let server: Server;
let url: string;
let streams: LivechatStreams;
let store: LivechatStore;
const logger = createLogger('provider-connector', { level: 'silent' });
/** Each session's last stream response, as the server holds it. */
const responses = new Map<string, ServerResponse>();

beforeAll(async () => {
  pool = await migratedPool();
  store = new LivechatStore(pool);
  // The timer's sweep is an hour away: the tests sweep when they choose to.
  streams = new LivechatStreams(store, logger, {
    perSession: 5,
    perIntegration: 2,
    perWorkspace: 3,
    perAddress: 4,
    perProcess: 100,
    sweepMs: 3_600_000,
    drainMs: 500,
  });
  // Real responses held open, as the stream route holds them: /<workspace>/<integration>/<session>?after=<seq>; 429
  // if refused.
  server = createServer(async (req, res) => {
    const target = new URL(req.url ?? '/', 'http://here');
    // As the route looks its session up before attaching: a client may be gone by then.
    const lookup = Number(target.searchParams.get('lookup_ms') ?? 0);
    if (lookup > 0) await new Promise((resolve) => setTimeout(resolve, lookup));
    const [, workspaceId, integrationId, sessionId] = target.pathname.split('/');
    const after = BigInt(target.searchParams.get('after') ?? '0');
    if (
      !streams.attach(
        {
          integrationId: integrationId!,
          workspaceId: workspaceId!,
          // Each stream from an address of its own unless told.
          address: target.searchParams.get('address') ?? randomUUID(),
        },
        sessionId!,
        res as unknown as Response,
        after,
      )
    ) {
      res.writeHead(429).end();
      return;
    }
    responses.set(sessionId!, res);
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write('retry: 2000\n\n');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server?.closeAllConnections();
  server?.close();
  await pool?.end();
});

/**
 * Opens a stream: its status, what it has received so far, and how to close it. `workspaceId`: the
 * integration's own id unless told, a workspace of its own.
 */
async function open(
  integrationId: string,
  sessionId: string = randomUUID(),
  after = 0n,
  workspaceId = integrationId,
  address?: string,
) {
  const controller = new AbortController();
  const from = address ? `&address=${address}` : '';
  const response = await fetch(`${url}/${workspaceId}/${integrationId}/${sessionId}?after=${after}${from}`, {
    signal: controller.signal,
  });
  let received = '';
  if (response.ok && response.body) {
    const decoder = new TextDecoder();
    void (async () => {
      try {
        for await (const chunk of response.body!) received += decoder.decode(chunk, { stream: true });
      } catch {
        // Aborted by close().
      }
    })();
  }
  return { status: response.status, received: () => received, close: () => controller.abort() };
}

/** The message texts a stream has received, in order. */
const texts = (received: string) =>
  [...received.matchAll(/^data: (.*)$/gm)].map((line) => (JSON.parse(line[1]!) as { text: string }).text);

async function liveChatIntegration(): Promise<string> {
  const id = randomUUID();
  await pool.query(
    `insert into integrations (id, workspace_id, channel, provider, status, config_sealed, account_id)
     values ($1, $2, 'livechat', 'livechat', 'connected', 'sealed', $3)`,
    [id, randomUUID(), id],
  );
  return id;
}

/** A session of a new live chat integration, opened by a visitor. */
async function liveSession() {
  const integrationId = await liveChatIntegration();
  const { session } = await store.createSession(integrationId, 'visitor', 'https://shop.example');
  return { integrationId, session };
}

/** Stores `count` operator messages in the session, each `length` times the letter, with no notice. */
async function storeMessages(sessionId: string, count: number, letter: string, length: number) {
  await pool.query(
    `insert into livechat_messages (id, session_id, author, text)
     select gen_random_uuid(), $1, 'operator', repeat($2, $3) from generate_series(1, $4)`,
    [sessionId, letter, length, count],
  );
}

it("holds no more of one integration's streams than its share, and still takes another integration's", async () => {
  const busy = randomUUID();
  const other = randomUUID();
  const held = [await open(busy), await open(busy)];
  expect(held.map((stream) => stream.status)).toEqual([200, 200]);
  // The third of the busy integration's visitors is refused; another integration's is taken.
  expect((await open(busy)).status).toBe(429);
  const taken = await open(other);
  expect(taken.status).toBe(200);

  // A stream closed gives its place back.
  held[0]!.close();
  const again = await waitFor(
    async () => {
      const stream = await open(busy);
      return stream.status === 200 ? stream : undefined;
    },
    { what: "the busy integration's freed place" },
  );
  for (const stream of [held[1]!, taken, again]) stream.close();
});

it("holds no more of one workspace's streams than its share, however many integrations it spreads them over", async () => {
  const workspace = randomUUID();
  const [first, second, third] = [randomUUID(), randomUUID(), randomUUID()];
  const held = [
    await open(first, undefined, undefined, workspace),
    await open(first, undefined, undefined, workspace),
    await open(second, undefined, undefined, workspace),
  ];
  expect(held.map((stream) => stream.status)).toEqual([200, 200, 200]);
  // Its third integration has streams left of its own, the workspace none.
  expect((await open(third, undefined, undefined, workspace)).status).toBe(429);
  const elsewhere = await open(third);
  expect(elsewhere.status).toBe(200);
  for (const stream of [...held, elsewhere]) stream.close();
});

it("holds no more of one address's streams than its share, whichever workspaces' widgets it opens them on", async () => {
  const address = '203.0.113.77';
  // Two streams on each of two workspaces' widgets: every share but the address's has room left.
  const held = [];
  for (const integration of [randomUUID(), randomUUID()])
    for (let i = 0; i < 2; i++) held.push(await open(integration, undefined, undefined, undefined, address));
  expect(held.map((stream) => stream.status)).toEqual([200, 200, 200, 200]);
  expect((await open(randomUUID(), undefined, undefined, undefined, address)).status).toBe(429);
  // Another client's visitor on the same widgets is taken.
  const visitor = await open(randomUUID(), undefined, undefined, undefined, '198.51.100.9');
  expect(visitor.status).toBe(200);
  for (const stream of [...held, visitor]) stream.close();
});

it('takes no place for a stream whose client left before it was attached', async () => {
  const integrationId = randomUUID();
  for (let i = 0; i < 2; i++) {
    const controller = new AbortController();
    const gone = fetch(`${url}/${integrationId}/${integrationId}/${randomUUID()}?after=0&lookup_ms=300`, {
      signal: controller.signal,
    }).catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, 50));
    controller.abort();
    await gone;
  }
  await new Promise((resolve) => setTimeout(resolve, 400));
  // Both of the integration's places are there still.
  const held = [await open(integrationId), await open(integrationId)];
  expect(held.map((stream) => stream.status)).toEqual([200, 200]);
  for (const stream of held) stream.close();
});

it('sweeps every open stream with one statement, each stream sent only what it has not sent', async () => {
  const sessions: { id: string; integrationId: string }[] = [];
  const opened: Awaited<ReturnType<typeof open>>[] = [];
  for (let i = 0; i < 24; i++) {
    const integrationId = await liveChatIntegration();
    const { session } = await store.createSession(integrationId, `visitor ${i}`, 'https://shop.example');
    sessions.push({ id: session.id, integrationId });
    opened.push(await open(integrationId, session.id));
  }
  expect(opened.every((stream) => stream.status === 200)).toBe(true);
  // Messages stored with no notice (a lost one): only the sweep can bring them. The first session has a
  // backlog longer than one read.
  for (const [index, session] of sessions.entries())
    await store.addMessage(pool, session.id, {
      id: randomUUID(),
      author: 'operator',
      text: `hello ${index}`,
    });
  for (let n = 1; n < replayPage.messages + 50; n++)
    await store.addMessage(pool, sessions[0]!.id, {
      id: randomUUID(),
      author: 'operator',
      text: `more ${n}`,
    });
  // The streams' first reads, made when they opened, are over.
  await waitFor(() => pool.idleCount === pool.totalCount && pool.waitingCount === 0, {
    what: 'an idle pool',
  });

  let checkouts = 0;
  const count = () => checkouts++;
  pool.on('acquire', count);
  try {
    await streams.sweep();
    await waitFor(
      () => opened.every((stream, index) => texts(stream.received()).includes(`hello ${index}`)),
      {
        what: 'every stream sent its message',
      },
    );
    await waitFor(() => texts(opened[0]!.received()).length === replayPage.messages + 50, {
      what: "the first session's whole backlog",
    });
    // One statement read the 24 sessions; the first session's stream read the rest of its backlog
    // itself, a read each time its socket's buffer had drained (230 events of some 140 bytes).
    expect(checkouts).toBeGreaterThanOrEqual(3);
    expect(checkouts).toBeLessThanOrEqual(5);
  } finally {
    pool.off('acquire', count);
  }
  expect(texts(opened[0]!.received())).toEqual([
    'hello 0',
    ...Array.from({ length: replayPage.messages + 49 }, (_, n) => `more ${n + 1}`),
  ]);
  expect(texts(opened[1]!.received())).toEqual(['hello 1']);

  // A second stream of the second session, opened after its first message (as a widget reconnecting with
  // Last-Event-ID): a sweep sends each stream of the session what that one lacks, and nothing twice.
  const { rows } = await pool.query<{ seq: string }>(
    'select max(seq)::text as seq from livechat_messages where session_id = $1',
    [sessions[1]!.id],
  );
  const second = await open(sessions[1]!.integrationId, sessions[1]!.id, BigInt(rows[0]!.seq));
  await store.addMessage(pool, sessions[1]!.id, { id: randomUUID(), author: 'operator', text: 'again' });
  await streams.sweep();
  await waitFor(() => texts(second.received()).includes('again'), { what: 'the second stream' });
  await waitFor(() => texts(opened[1]!.received()).includes('again'), { what: 'the first stream' });
  expect(texts(second.received())).toEqual(['again']);
  expect(texts(opened[1]!.received())).toEqual(['hello 1', 'again']);
  for (const stream of [...opened, second]) stream.close();
});

it("sends a session's messages in order where their seqs cross a power of ten", async () => {
  const { integrationId, session } = await liveSession();
  await pool.query('alter table livechat_messages alter column seq restart with 995');
  // One stream open before the messages, brought them by a sweep; one opened after, by its first read.
  const early = await open(integrationId, session.id);
  const expected = Array.from({ length: 10 }, (_, n) => `message ${n}`);
  for (const text of expected)
    await store.addMessage(pool, session.id, { id: randomUUID(), author: 'visitor', text });
  await streams.sweep();
  const late = await open(integrationId, session.id);
  for (const stream of [early, late]) {
    await waitFor(() => texts(stream.received()).length >= expected.length, { what: 'the ten messages' });
    expect(texts(stream.received())).toEqual(expected);
    expect([...stream.received().matchAll(/^id: (\d+)$/gm)].map((line) => Number(line[1]))).toEqual(
      Array.from({ length: 10 }, (_, n) => 995 + n),
    );
    stream.close();
  }
});

it('sends a message whose transaction commits after a later one of the same session', async () => {
  const { integrationId, session } = await liveSession();
  const stream = await open(integrationId, session.id);
  // A visitor's line stored in a transaction still open while an operator's is stored on its own.
  const visitor = await pool.connect();
  let operatorStored = false;
  try {
    await visitor.query('begin');
    await store.addMessage(visitor, session.id, { id: randomUUID(), author: 'visitor', text: 'first' });
    const operator = store
      .addMessage(pool, session.id, { id: randomUUID(), author: 'operator', text: 'second' })
      .then(() => {
        operatorStored = true;
      });
    // The operator's line is stored, or waits on the session's lock.
    await waitFor(
      async () =>
        operatorStored ||
        (
          await pool.query(
            `select 1 from pg_stat_activity
              where wait_event_type = 'Lock' and query like '%insert into livechat_messages%'`,
          )
        ).rowCount === 1,
      { what: 'the operator line stored or waiting' },
    );
    await streams.sweep();
    await visitor.query('commit');
    await operator;
  } finally {
    visitor.release();
  }
  await streams.sweep();
  await waitFor(() => texts(stream.received()).length >= 2, { what: 'both lines' });
  expect(texts(stream.received())).toEqual(['first', 'second']);
  stream.close();
});

it('ends a stream whose client leaves what it was sent unread, holding no more of it than its buffer', async () => {
  const { integrationId, session } = await liveSession();
  // 16 MB of history: more than the kernel's buffers take in for a client that does not read.
  await storeMessages(session.id, 1000, 'x', 16_000);
  // A client that asks for the whole history and never reads a byte of it.
  const client = connect((server.address() as AddressInfo).port, '127.0.0.1');
  client.pause();
  client.write(`GET /${integrationId}/${integrationId}/${session.id}?after=0 HTTP/1.1\r\nHost: here\r\n\r\n`);
  let most = 0;
  const res = await waitFor(
    () => {
      const held = responses.get(session.id);
      most = Math.max(most, held?.writableLength ?? 0);
      return held?.destroyed ? held : undefined;
    },
    { what: 'the unread stream ended', intervalMs: 5 },
  );
  expect(res.destroyed).toBe(true);
  // What waited in the process was the socket's buffer and a message, not the session's 16 MB.
  expect(most).toBeLessThan(256 * 1024);
  client.destroy();
});

it('ends a stream whose buffer keep-alives alone fill, once it has not drained for its time', async () => {
  const { integrationId, session } = await liveSession();
  const stream = await open(integrationId, session.id);
  const res = await waitFor(() => responses.get(session.id), { what: 'the stream attached' });
  // Nothing leaves the process any more, as for a client whose window stays shut: the buffer is a few
  // bytes short of full (a chunk's framing takes some), and the sweep's keep-alive fills it.
  const socket = res.socket!;
  socket.cork();
  const room = socket.writableHighWaterMark - socket.writableLength - 16;
  expect(res.write(`:${' '.repeat(room - 3)}\n\n`)).toBe(true);
  await streams.sweep();
  expect(res.writableNeedDrain).toBe(true);
  await waitFor(() => res.destroyed, { what: 'the stream ended', timeoutMs: 5_000 });
  stream.close();
});

it("reads a session's backlog a page of bounded text at a time, its first message whatever its size", async () => {
  const { session } = await liveSession();
  // Ten messages of 16,000 bytes each, then one longer than a page.
  await storeMessages(session.id, 10, 'x', 16_000);
  await storeMessages(session.id, 1, 'y', 100_000);
  // A stream's page: messages while the text before them is under 32 KiB, and word that more follow.
  const page = await store.messagesAfter(session.id, 0n);
  expect(page.messages).toHaveLength(3);
  expect(page.more).toBe(true);
  // The sweep's: under 16 KiB.
  const swept = (await store.messagesAfterEach(new Map([[session.id, 0n]]))).get(session.id);
  expect(swept?.messages).toHaveLength(2);
  expect(swept?.more).toBe(true);
  let seq = BigInt(page.messages[2]!.seq);
  for (let read = 0; read < 2; read++) {
    const next = await store.messagesAfter(session.id, seq);
    seq = BigInt(next.messages.at(-1)!.seq);
  }
  // The tenth and the long one: the text before the long one is under the budget.
  const tail = await store.messagesAfter(session.id, seq);
  expect(tail.messages.map((message) => message.text.length)).toEqual([16_000, 100_000]);
  expect(tail.more).toBe(false);
  // The long one alone is a page, over the budget as it is.
  const alone = await store.messagesAfter(session.id, BigInt(tail.messages[0]!.seq));
  expect(alone.messages.map((message) => message.text.length)).toEqual([100_000]);
});

it('drops the rest of a page when its buffer is full, and reads on from there once it has drained', async () => {
  const { integrationId, session } = await liveSession();
  const reads: bigint[] = [];
  let answered = 0;
  const messagesAfter = store.messagesAfter;
  store.messagesAfter = async (sessionId, after) => {
    if (sessionId !== session.id) return messagesAfter.call(store, sessionId, after);
    reads.push(after);
    const page = await messagesAfter.call(store, sessionId, after);
    answered++;
    return page;
  };
  try {
    const stream = await open(integrationId, session.id);
    const res = await waitFor(() => responses.get(session.id), { what: 'the stream attached' });
    // Answered, not only asked: a first read still under way would find the messages stored below.
    await waitFor(() => answered === 1, { what: 'its first read' });
    // Nothing leaves until the test lets it: five messages of 6,000 bytes fill the 16 KiB buffer at the third.
    res.socket!.cork();
    await storeMessages(session.id, 5, 'z', 6_000);
    const { rows } = await pool.query<{ seq: string }>(
      'select seq::text as seq from livechat_messages where session_id = $1 order by seq',
      [session.id],
    );
    streams.wake(session.id);
    await waitFor(() => res.writableNeedDrain, { what: 'the buffer full' });
    expect(reads).toEqual([0n, 0n]);
    res.socket!.uncork();
    await waitFor(() => texts(stream.received()).length === 5, { what: 'every message sent' });
    // The page's last two were read again, after the third.
    expect(reads).toEqual([0n, 0n, BigInt(rows[2]!.seq)]);
    stream.close();
  } finally {
    store.messagesAfter = messagesAfter;
  }
});
