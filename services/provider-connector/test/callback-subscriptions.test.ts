import { randomUUID } from 'node:crypto';
import { InProcessBus } from '@inbox/bus';
import { OutboxRelay, type Pool } from '@inbox/db';
import { createSandbox, type Sandbox } from '@inbox/provider-sandbox';
import { createLogger, SecretBox } from '@inbox/service-kit';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { InboundBatch, InboundMessage, ProviderCall } from '../src/adapters/channel-adapter.js';
import { metaMessagingAdapter } from '../src/adapters/meta-messaging.js';
import { photoAdapter } from '../src/adapters/photo.js';
import { messengerProduct, socialAdapter } from '../src/adapters/social.js';
import {
  callbackSubscriptionSweep,
  defaultCallbackSubscriptionOptions,
} from '../src/handlers/callback-subscriptions.js';
import { KeptCallbacks } from '../src/handlers/kept-callbacks.js';
import { IntegrationStore } from '../src/store/integrations.js';
import { inboundTexts, loopbackProviders, migratedPool } from './support.js';

// Meta unsubscribes an app whose webhooks have failed for an hour, and posts nothing more for the Page:
// the connector finds the subscription gone and subscribes the Page again.

const PAGE = '104729185532377';
const TOKEN = 'EAAG-page-subscriptions';
const APP_SECRET = 'the-apps-secret';
const providers = loopbackProviders();
const logLines: Array<Record<string, unknown>> = [];
const logger = createLogger('provider-connector', {
  level: 'warn',
  destination: { write: (line: string) => logLines.push(JSON.parse(line) as Record<string, unknown>) },
});
let pool: Pool;
let sandbox: Sandbox;
let sandboxUrl = '';
let downUrl = '';

beforeAll(async () => {
  pool = await migratedPool();
  // Meta's hour of retries times a ten-thousandth.
  sandbox = createSandbox({ httpCallbacks: 'allow', redeliveryDelayScale: 0.0001 });
  sandboxUrl = await providers.listen(sandbox.app);
  // The connector out of reach for posts: it answers Meta's handshake, and 503 to every webhook.
  downUrl = await providers.listen((req, res) => {
    if (req.method === 'GET')
      res.end(new URL(req.url ?? '/', 'http://x').searchParams.get('hub.challenge') ?? '');
    else res.writeHead(503).end();
  });
});
afterAll(async () => {
  await pool?.end();
});

const subscribedApps = async () =>
  (
    (await (
      await fetch(`${sandboxUrl}/social/v21.0/${PAGE}/subscribed_apps`, {
        headers: { authorization: `Bearer ${TOKEN}` },
      })
    ).json()) as { data: unknown[] }
  ).data;
const inbound = (text = 'oi') =>
  fetch(`${sandboxUrl}/_sandbox/inbound`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      channel: 'social',
      account: PAGE,
      from: '6543219870123456',
      text,
      name: 'Ana Souza',
    }),
  });
const textsOf = async (workspaceId: string) =>
  (
    await pool.query<{ text: string; name: string | null }>(
      `select data->>'text' as text, data->>'name' as name from outbox
        where workspace_id = $1 and type = 'inbound.message' order by seq`,
      [workspaceId],
    )
  ).rows;

/** A Page's config, its Graph at `base_url`. */
const pageConfig = (base_url: string, page_id = PAGE, page_access_token = TOKEN) => ({
  base_url,
  page_id,
  page_access_token,
  app_secret: APP_SECRET,
  verify_token: 'v',
});
/** The messages of the last minute a read back gives, in the order it gives them. */
async function readBackLastMinute<C>(
  adapter: { messagesSince?: (config: C, call: ProviderCall, since: Date) => AsyncIterable<InboundBatch> },
  config: C,
): Promise<InboundMessage[]> {
  const read: InboundMessage[] = [];
  for await (const batch of adapter.messagesSince!(config, providers.call(), new Date(Date.now() - 60_000)))
    read.push(...batch.messages);
  return read;
}

it('subscribes a Page again once Meta has unsubscribed the app after an hour of failed webhooks, and reads back what it posted nowhere', async () => {
  const config = pageConfig(`${sandboxUrl}/social`);
  await socialAdapter.registerInbound(config, `${downUrl}/hook`, providers.call());
  const app = await fetch(`${sandboxUrl}/_sandbox/social/app`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      account: PAGE,
      app_secret: APP_SECRET,
      callback_url: `${downUrl}/hook`,
      verify_token: 'v',
    }),
  });
  expect(app.status).toBe(200);
  const store = new IntegrationStore(pool, new SecretBox(SecretBox.generateKey()));
  const workspaceId = randomUUID();
  const created = await store.create(workspaceId, { channel: 'social', config, accountId: PAGE });
  // Not started: the events stay in the outbox, where the test reads them.
  const relay = new OutboxRelay({ pool, bus: new InProcessBus(), schema: 'connector' });
  const kept = new KeptCallbacks({ pool, store, relay, logger });
  const sweep = callbackSubscriptionSweep(
    {
      pool,
      store,
      logger,
      guard: providers.guard,
      providerTimeoutMs: 5_000,
      publicConnectorUrl: downUrl,
      kept,
    },
    { ...defaultCallbackSubscriptionOptions, everyMs: 60_000, workers: 1 },
  );

  // Subscribed: the check changes nothing.
  await sweep.pass();
  expect(logLines).toEqual([]);

  expect(await (await inbound('perdida na hora')).json()).toMatchObject({
    delivered_status: 503,
    redelivering: true,
  });
  await sandbox.redelivered();
  expect(await subscribedApps()).toEqual([]);
  // Meta keeps it, and posts it nowhere.
  expect((await inbound('perdida depois')).status).toBe(409);

  // Checked last eleven minutes ago, it is due again.
  await pool.query(
    `update integrations set subscription_checked_at = now() - interval '11 minutes' where id = $1`,
    [created!.integration.id],
  );
  await sweep.pass();
  await sweep.stop();
  // What Meta gave up on and what it posted nowhere are read back from its Conversations API, with the
  // name it gives there, in the order they were sent.
  await kept.drain();
  expect(await textsOf(workspaceId)).toEqual([
    { text: 'perdida na hora', name: 'Ana Souza' },
    { text: 'perdida depois', name: 'Ana Souza' },
  ]);

  expect(await subscribedApps()).toEqual([
    expect.objectContaining({ subscribed_fields: expect.arrayContaining(['messages']) }),
  ]);
  expect(await (await inbound()).json()).toMatchObject({ delivered_status: 503 });
  expect(logLines).toContainEqual(
    expect.objectContaining({
      msg: 'integration registered again: its provider had stopped calling it',
      integration_id: created!.integration.id,
      channel: 'social',
    }),
  );
  sandbox.reset();
});

it("reads back at most forty pages and 2,000 messages from a tenant's server that lists conversations without end", async () => {
  let calls = 0;
  let asked: URL | undefined;
  let sender: ((thread: number) => string) | undefined;
  const endless = await providers.listen((req, res) => {
    calls++;
    asked = new URL(req.url ?? '/', 'http://x');
    const now = new Date().toISOString().replace(/\.\d{3}Z$/, '+0000');
    const data = Array.from({ length: 25 }, (_, thread) => ({
      id: `t_${calls}_${thread}`,
      updated_time: now,
      messages: {
        data: Array.from({ length: 20 }, (_, n) => ({
          id: `m_${calls}_${thread}_${n}`,
          created_time: now,
          from: { id: sender?.(thread) ?? `65432198700${String(thread).padStart(5, '0')}`, name: 'Ana' },
          message: 'oi',
        })),
      },
    }));
    res.setHeader('content-type', 'application/json');
    res.end(
      JSON.stringify({ data, paging: { cursors: { after: `c${calls}` }, next: 'https://graph/next' } }),
    );
  });
  const config = pageConfig(endless);
  // Paced at a thousand calls a second, not Meta's two: what this test reads is the bound.
  const unpaced = metaMessagingAdapter({ ...messengerProduct, conversationsPerSecond: 1_000 });
  /** The users' messages of the last minute, read back: how many. */
  const readBack = async () => (await readBackLastMinute(unpaced, config)).length;
  expect(await readBack()).toBe(2_000);
  expect(calls).toBe(4);
  // Each conversation's latest messages, by field expansion, paged by the cursor Meta gave.
  expect(asked?.pathname).toBe(`/v21.0/${PAGE}/conversations`);
  expect(Object.fromEntries(asked!.searchParams)).toMatchObject({
    platform: 'messenger',
    fields: 'id,updated_time,messages.limit(20){id,created_time,from,message}',
    limit: '25',
    after: 'c3',
  });
  // The Page's own messages only: pages are what bounds the read.
  calls = 0;
  sender = () => PAGE;
  expect(await readBack()).toBe(0);
  expect(calls).toBe(40);
});

it('takes up at the next check a read back that was cut short, though the Page is subscribed by then', async () => {
  let fields: string[] = [];
  let conversationCalls = 0;
  const now = () => new Date().toISOString().replace(/\.\d{3}Z$/, '+0000');
  // Meta as a test double: the app unsubscribed until the connector subscribes it again; the first read
  // of the conversations failing ("An unexpected error has occurred"), the next one answered.
  const meta = await providers.listen((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    res.setHeader('content-type', 'application/json');
    if (url.pathname.endsWith('/subscribed_apps') && req.method === 'POST') {
      fields = (url.searchParams.get('subscribed_fields') ?? '').split(',');
      res.end(JSON.stringify({ success: true }));
    } else if (url.pathname.endsWith('/subscribed_apps')) {
      res.end(JSON.stringify({ data: fields.length ? [{ subscribed_fields: fields }] : [] }));
    } else if (url.pathname.endsWith('/conversations') && ++conversationCalls === 1) {
      res.writeHead(500).end(
        JSON.stringify({
          error: { message: 'An unexpected error has occurred. Please retry your request later.', code: 2 },
        }),
      );
    } else {
      const message = {
        id: 'm_lida-depois',
        created_time: now(),
        from: { id: '6543219870000009' },
        message: 'oi',
      };
      res.end(JSON.stringify({ data: [{ id: 't_1', updated_time: now(), messages: { data: [message] } }] }));
    }
  });
  const store = new IntegrationStore(pool, new SecretBox(SecretBox.generateKey()));
  const workspaceId = randomUUID();
  const page = '104729185532378';
  const created = await store.create(workspaceId, {
    channel: 'social',
    config: {
      base_url: meta,
      page_id: page,
      page_access_token: TOKEN,
      app_secret: APP_SECRET,
      verify_token: 'v',
    },
    accountId: page,
  });
  const relay = new OutboxRelay({ pool, bus: new InProcessBus(), schema: 'connector' });
  const kept = new KeptCallbacks({ pool, store, relay, logger });
  const sweep = callbackSubscriptionSweep(
    { pool, store, logger, guard: providers.guard, providerTimeoutMs: 5_000, publicConnectorUrl: meta, kept },
    { ...defaultCallbackSubscriptionOptions, everyMs: 60_000, workers: 1 },
  );
  const readBackSince = async () =>
    (await pool.query('select read_back_since from integrations where id = $1', [created!.integration.id]))
      .rows[0]?.read_back_since as Date | null;

  await sweep.pass();
  expect(fields).not.toEqual([]);
  expect(await readBackSince()).toBeInstanceOf(Date);
  await kept.drain();
  expect(await inboundTexts(pool, workspaceId)).toEqual([]);

  await pool.query('update integrations set subscription_checked_at = null where id = $1', [
    created!.integration.id,
  ]);
  await sweep.pass();
  await sweep.stop();
  await kept.drain();
  expect(conversationCalls).toBe(2);
  expect(await inboundTexts(pool, workspaceId)).toEqual(['oi']);
  expect(await readBackSince()).toBeNull();
});

it("leaves out an Instagram account's own messages, though a conversation names it by its app-scoped id", async () => {
  const igUserId = '17841400000000099';
  const appScopedId = '29990000000000001';
  const now = new Date().toISOString().replace(/\.\d{3}Z$/, '+0000');
  const instagram = await providers.listen((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    res.setHeader('content-type', 'application/json');
    if (url.pathname === `/v21.0/${igUserId}`) {
      res.end(JSON.stringify({ id: appScopedId }));
      return;
    }
    const messages = [
      {
        id: 'aWdf-resposta',
        created_time: now,
        from: { id: appScopedId, username: 'loja' },
        message: 'resposta',
      },
      {
        id: 'aWdf-pergunta',
        created_time: now,
        from: { id: '1122334455667788', username: 'ana' },
        message: 'oi',
      },
    ];
    res.end(JSON.stringify({ data: [{ id: 't_1', updated_time: now, messages: { data: messages } }] }));
  });
  const config = {
    base_url: instagram,
    ig_user_id: igUserId,
    access_token: 'IGAA-token',
    app_secret: APP_SECRET,
    verify_token: 'v',
  };
  const texts = (await readBackLastMinute(photoAdapter, config)).map((message) => message.text);
  expect(texts).toEqual(['oi']);
});

it("paces its reads of a Page's conversations to Meta's two calls a second, counted from each answer", async () => {
  const arrivals: number[] = [];
  const now = new Date().toISOString().replace(/\.\d{3}Z$/, '+0000');
  const paged = await providers.listen((_req, res) => {
    arrivals.push(performance.now());
    const page = arrivals.length;
    const data = [
      {
        id: `t_${page}`,
        updated_time: now,
        messages: {
          data: [
            {
              id: `m_${page}`,
              created_time: now,
              from: { id: `654321987000000${page}` },
              message: `oi ${page}`,
            },
          ],
        },
      },
    ];
    res.setHeader('content-type', 'application/json');
    res.end(
      JSON.stringify(
        page < 4
          ? { data, paging: { cursors: { after: `c${page}` }, next: 'https://graph/next' } }
          : { data },
      ),
    );
  });
  const config = pageConfig(paged);
  const texts = (await readBackLastMinute(socialAdapter, config)).map((message) => message.text);
  expect(texts).toEqual(['oi 1', 'oi 2', 'oi 3', 'oi 4']);
  // Each call half a second or more after the one before it: no three within a second.
  const gaps = arrivals.slice(1).map((at, i) => at - arrivals[i]!);
  expect(gaps).toHaveLength(3);
  for (const gap of gaps) expect(gap).toBeGreaterThanOrEqual(500);
});

it('asks a second later for a page of conversations Meta throttled all the same, and reads on', async () => {
  let calls = 0;
  let code = 613;
  const now = new Date().toISOString().replace(/\.\d{3}Z$/, '+0000');
  const throttling = await providers.listen((_req, res) => {
    calls++;
    res.setHeader('content-type', 'application/json');
    // Another reader of the Page spent its two calls: the first two asks are throttled.
    if (calls <= 2) {
      res.writeHead(400).end(
        JSON.stringify({
          error: { message: `(#${code}) Calls to this api have exceeded the rate limit.`, code },
        }),
      );
      return;
    }
    const message = { id: 'm_1', created_time: now, from: { id: '6543219870000001' }, message: 'oi' };
    res.end(JSON.stringify({ data: [{ id: 't_1', updated_time: now, messages: { data: [message] } }] }));
  });
  const config = pageConfig(throttling);
  const texts = (await readBackLastMinute(socialAdapter, config)).map((message) => message.text);
  expect(texts).toEqual(['oi']);
  expect(calls).toBe(3);

  // Throttled on every ask, the read ends with Meta's refusal, to be taken up at the next check.
  calls = -100;
  await expect(readBackLastMinute(socialAdapter, config)).rejects.toMatchObject({
    name: 'ProviderError',
    refusal: 'rate_limited',
  });
  expect(calls).toBe(-96);

  // Messenger's Business Use Case limit lasts minutes to an hour: not asked again within the read.
  calls = -100;
  code = 80006;
  await expect(readBackLastMinute(socialAdapter, config)).rejects.toMatchObject({ refusal: 'rate_limited' });
  expect(calls).toBe(-99);
});

it("reads back from the sandbox, which holds Meta's two calls a second, a Page's conversations over three pages", async () => {
  const page = '104729185532379';
  const token = 'EAAG-page-three-pages';
  const config = pageConfig(`${sandboxUrl}/social`, page, token);
  await socialAdapter.registerInbound(config, `${downUrl}/hook`, providers.call());
  // Unsubscribed: Meta keeps what comes, and posts it nowhere.
  await fetch(`${sandboxUrl}/social/v21.0/${page}/subscribed_apps`, {
    method: 'DELETE',
    headers: { authorization: `Bearer ${token}` },
  });
  const users = Array.from({ length: 60 }, (_, n) => `65432198710${String(n).padStart(5, '0')}`);
  for (const from of users) {
    const posted = await fetch(`${sandboxUrl}/_sandbox/inbound`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ channel: 'social', account: page, from, text: `oi ${from}` }),
    });
    expect(posted.status).toBe(409);
  }
  const read = (await readBackLastMinute(socialAdapter, config)).map((message) => message.from);
  expect(read.sort()).toEqual(users);
  sandbox.reset();
});
