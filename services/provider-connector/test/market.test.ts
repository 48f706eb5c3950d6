import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { InProcessBus } from '@inbox/bus';
import { platformTexts } from '@inbox/contracts';
import { createPool, migrate, OutboxRelay, type Pool } from '@inbox/db';
import { AddressPolicy, OutboundGuard } from '@inbox/outbound-http';
import { createSandbox, type Sandbox } from '@inbox/provider-sandbox';
import { createHttpApp, createLogger, finishHttpApp, SecretBox } from '@inbox/service-kit';
import { createDatabase, waitFor } from '@inbox/testkit';
import { afterAll, beforeAll, beforeEach, describe, expect, inject, it } from 'vitest';
import { marketAdapter } from '../src/adapters/market.js';
import { inboundRoutes } from '../src/handlers/inbound.js';
import { createIntegration } from '../src/handlers/integrations.js';
import { KeptCallbacks } from '../src/handlers/kept-callbacks.js';
import { defaultMissedCallbacksOptions, missedCallbacksSweep } from '../src/handlers/missed-callbacks.js';
import { sendText } from '../src/handlers/send-text.js';
import { IntegrationStore } from '../src/store/integrations.js';
import { oauthTokens } from '../src/store/oauth-tokens.js';
import { replyContexts } from '../src/store/reply-contexts.js';

// Mercado Livre against its emulator: questions answered through /answers, notifications that are not
// ours refused, and the OAuth tokens refreshed once across replicas, rotated and sealed.

type Json = Record<string, unknown>;
const logger = createLogger('provider-connector', { level: 'silent' });
const closers: Array<() => Promise<void>> = [];
const APP = { client_id: '6231840011112222', client_secret: 'market-test-secret' };
const SELLER = '189394110';
const BUYER = '162981404';

let pool: Pool;
let databaseUrl = '';
let secrets: SecretBox;
let sandbox: Sandbox;
let sandboxUrl = '';
let connectorUrl = '';
let guard: OutboundGuard;
let store: IntegrationStore;
let kept: KeptCallbacks;
let fetching: { guard: OutboundGuard; providerTimeoutMs: number };

/** Listens on a loopback port: the sandbox's app, or a bare server standing for a provider. */
async function serve(app: { listen(port: number, host: string): Server }): Promise<string> {
  const server: Server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  closers.push(async () => {
    server.closeAllConnections();
    server.close();
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const control = async <T = Json>(path: string, body?: Json) => {
  const res = await fetch(`${sandboxUrl}/_sandbox${path}`, {
    method: body ? 'POST' : 'GET',
    headers: { 'content-type': 'application/json' },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  return { status: res.status, body: (await res.json()) as T };
};

const outbox = async (workspaceId: string, type: string): Promise<Json[]> => {
  // Notifications are kept and their resources fetched by the workers: all of them, before it is read.
  await kept.drain();
  const { rows } = await pool.query<{ data: Json }>(
    'select data from outbox where workspace_id = $1 and type = $2 order by seq',
    [workspaceId, type],
  );
  return rows.map((row) => row.data);
};

beforeAll(async () => {
  databaseUrl = await createDatabase(inject('infra').postgresAdminUrl);
  pool = createPool({ url: databaseUrl, schema: 'connector' });
  await migrate(pool, {
    schema: 'connector',
    directory: fileURLToPath(new URL('../migrations', import.meta.url)),
    outbox: true,
  });
  secrets = new SecretBox(SecretBox.generateKey());
  store = new IntegrationStore(pool, secrets);
  // ML's hour of retries of a notification not answered 200, times a ten-thousandth.
  sandbox = createSandbox({ httpCallbacks: 'allow', redeliveryDelayScale: 0.0001 });
  sandboxUrl = await serve(sandbox.app);
  guard = new OutboundGuard(AddressPolicy.fromSetting('127.0.0.0/8'), { timeoutMs: 5_000 });
  closers.push(() => guard.close());
  const relay = new OutboxRelay({ pool, bus: new InProcessBus(), schema: 'connector' });
  const app = createHttpApp({ logger, parseJson: false });
  fetching = { guard, providerTimeoutMs: 5_000 };
  kept = new KeptCallbacks({ pool, store, relay, logger, fetching });
  closers.push(() => kept.stop());
  app.use(inboundRoutes({ pool, store, relay, logger, fetching, kept }));
  finishHttpApp(app, logger);
  connectorUrl = await serve(app);
});
afterAll(async () => {
  for (const close of closers.reverse()) await close();
  await pool?.end();
});

/** The buyer writes to the seller, and the workers take it in: a reply then has a conversation to go to. */
const buyerWrote = async () => {
  await control('/inbound', {
    channel: 'market',
    account: SELLER,
    from: BUYER,
    text: 'oi',
    topic: 'messages',
  });
  await kept.drain();
};

/** A new seller consent and integration, its notification URL set in the emulated console. */
async function connect() {
  sandbox.reset();
  await control('/market/applications', APP);
  const granted = await control<{ access_token: string; refresh_token: string }>('/market/authorizations', {
    client_id: APP.client_id,
    seller_id: SELLER,
    nickname: 'LOJA_TESTE',
  });
  const workspaceId = randomUUID();
  const created = await createIntegration(
    { store, guard, logger, publicConnectorUrl: connectorUrl, providerTimeoutMs: 5_000 },
    {
      workspace_id: workspaceId,
      channel: 'market',
      config: {
        base_url: `${sandboxUrl}/market`,
        seller_id: SELLER,
        access_token: granted.body.access_token,
        refresh_token: granted.body.refresh_token,
        ...APP,
      },
    },
  );
  const callbackUrl = `${connectorUrl}/inbound/market/${created.id}`;
  await control('/market/applications', { ...APP, notification_url: callbackUrl });
  const send = (
    text: string,
    { store: through = store, providerTimeoutMs = 5_000, messageId = randomUUID() } = {} as {
      store?: IntegrationStore;
      providerTimeoutMs?: number;
      messageId?: string;
    },
  ) =>
    sendText(
      { store: through, guard, logger, providerTimeoutMs, replyContexts: (id) => replyContexts(pool, id) },
      {
        workspace_id: workspaceId,
        integration_id: created.id,
        message_id: messageId,
        to: null,
        to_user_id: BUYER,
        text,
      },
    );
  return { workspaceId, created, callbackUrl, send, granted: granted.body };
}

describe('market (Mercado Livre)', () => {
  beforeEach(() => sandbox.reset());

  it('tells which notification URL and topics to set in the developer console, which has no API', async () => {
    const { created, callbackUrl } = await connect();
    expect(created.warnings).toEqual([
      platformTexts.callbackUrlManual('market', callbackUrl, ['questions', 'messages']),
    ]);
  });

  it("takes a buyer's question in, named by the nickname ML gives, and answers it through /answers", async () => {
    const { workspaceId, created, send } = await connect();
    const asked = await control('/inbound', {
      channel: 'market',
      account: SELLER,
      from: BUYER,
      name: 'COMPRADOR_TESTE',
      text: 'Tem na cor azul?',
      repeat: 2,
    });
    expect(asked.body).toMatchObject({ ok: true, delivered_statuses: [200, 200] });
    expect(await outbox(workspaceId, 'inbound.message')).toEqual([
      expect.objectContaining({
        from: null,
        from_user_id: BUYER,
        name: 'COMPRADOR_TESTE',
        text: 'Tem na cor azul?',
        provider_message_id: asked.body.provider_message_id,
        integration: { id: created.id, channel: 'market', provider: 'market' },
      }),
    ]);
    const sent = await send('Temos sim!');
    expect(sent.provider_message_id).toBe(`${asked.body.provider_message_id}:answer`);
    const log = (await (await fetch(`${sandboxUrl}/_sandbox/sent?channel=market`)).json()) as Json[];
    expect(log.at(-1)).toMatchObject({
      path: '/market/answers',
      body: { question_id: Number(asked.body.provider_message_id), text: 'Temos sim!' },
    });
    // ML notifies the answer too; the question is answered now and is not a buyer's message again.
    await sandbox.idle();
    expect(await outbox(workspaceId, 'inbound.message')).toHaveLength(1);
    // One answer per question: with no sale either, there is nothing left to reply to.
    await expect(send('mais uma')).rejects.toMatchObject({ status: 502 });
  });

  it('refuses notifications for another application or seller, with nothing fetched', async () => {
    const { workspaceId, callbackUrl } = await connect();
    for (const forged of [
      { application_id: 1234567890123456, user_id: Number(SELLER) },
      { application_id: Number(APP.client_id), user_id: 999999 },
    ]) {
      const answer = await fetch(callbackUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          _id: 'x',
          resource: '/questions/13000000000',
          topic: 'questions',
          attempts: 1,
          ...forged,
        }),
      });
      expect(answer.status).toBe(401);
    }
    expect(await outbox(workspaceId, 'inbound.message')).toEqual([]);
  });

  it('acknowledges a notification whose question ML says is gone, taking nothing in', async () => {
    const { workspaceId, callbackUrl } = await connect();
    const answer = await fetch(callbackUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        _id: 'gone',
        resource: '/questions/12999999999',
        user_id: Number(SELLER),
        topic: 'questions',
        application_id: Number(APP.client_id),
        attempts: 1,
      }),
    });
    expect(answer.status).toBe(200);
    expect(await outbox(workspaceId, 'inbound.message')).toEqual([]);
  });

  it('answers a notification at once and fetches its question once ML gives it, however long ML will not', async () => {
    const { workspaceId } = await connect();
    const fault = (body: Json) => control('/faults', { channel: 'market', account: SELLER, ...body });
    expect((await fault({ mode: 'error', status: 500 })).status).toBe(200);
    try {
      const asked = await control('/inbound', {
        channel: 'market',
        account: SELLER,
        from: BUYER,
        text: 'Ainda tem?',
      });
      // ML gets its 200 at once: the fetch it would not answer waits, kept.
      expect(asked.body).toMatchObject({ ok: true, delivered_status: 200 });
      expect(await outbox(workspaceId, 'inbound.message')).toEqual([]);
      const { rows } = await pool.query<{ attempts: number }>(
        'select attempts from callback_inbox where workspace_id = $1',
        [workspaceId],
      );
      expect(rows).toEqual([{ attempts: 1 }]);
      expect((await fault({ mode: 'off' })).status).toBe(200);
      await pool.query('update callback_inbox set due_at = now() where workspace_id = $1', [workspaceId]);
      expect(await outbox(workspaceId, 'inbound.message')).toEqual([
        expect.objectContaining({ text: 'Ainda tem?', provider_message_id: asked.body.provider_message_id }),
      ]);
    } finally {
      await fault({ mode: 'off' });
    }
  });

  it('refreshes an expired token once across two replicas, and stores the rotated pair sealed', async () => {
    const { workspaceId, created, send, granted } = await connect();
    await control('/inbound', {
      channel: 'market',
      account: SELLER,
      from: BUYER,
      text: 'pós-venda',
      topic: 'messages',
    });
    await kept.drain();
    await control('/market/expire-tokens', { seller_id: SELLER });
    // A second replica: its own store and pool, the same database and key.
    const otherPool = createPool({ url: databaseUrl, schema: 'connector' });
    closers.push(() => otherPool.end());
    const other = new IntegrationStore(otherPool, secrets);
    const [first, second] = await Promise.all([send('um'), send('dois', { store: other })]);
    expect(first.provider_message_id).not.toBe(second.provider_message_id);
    const { body: refreshes } =
      await control<Array<{ refresh_token: string; spent: boolean }>>('/market/refreshes');
    // The consent's token spent once; the pair it gave is the one stored.
    expect(refreshes.filter((entry) => entry.spent).map((entry) => entry.refresh_token)).toEqual([
      granted.refresh_token,
    ]);
    const stored = await store.get(workspaceId, created.id);
    const fresh = refreshes.find((entry) => !entry.spent)!;
    expect(stored?.config.refresh_token).toBe(fresh.refresh_token);
    const { rows } = await pool.query<{ config_sealed: string }>(
      'select config_sealed from integrations where id = $1',
      [created.id],
    );
    expect(rows[0]!.config_sealed).not.toContain(fresh.refresh_token);
  });

  it('lets two replicas that both saw the token refused spend the refresh token once', async () => {
    const { workspaceId, created, granted } = await connect();
    const otherPool = createPool({ url: databaseUrl, schema: 'connector' });
    closers.push(() => otherPool.end());
    // Slow enough that both replicas are inside a refresh at once, were they not taking turns.
    const refresh = async (refreshToken: string) => {
      await new Promise((resolve) => setTimeout(resolve, 150));
      const answer = await fetch(`${sandboxUrl}/market/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'refresh_token', ...APP, refresh_token: refreshToken }),
      });
      const body = (await answer.json()) as Json;
      if (!answer.ok) throw new Error(String(body.error));
      return {
        accessToken: String(body.access_token),
        refreshToken: String(body.refresh_token),
        expiresIn: Number(body.expires_in),
      };
    };
    const replicas = [store, new IntegrationStore(otherPool, secrets)].map((each) =>
      oauthTokens(each, workspaceId, created.id, 2_000),
    );
    const [a, b] = await Promise.all(
      replicas.map((tokens) => tokens.renew(String(granted.access_token), refresh)),
    );
    expect(a).toBe(b);
    expect(a).not.toBe(granted.access_token);
    const refreshes = (await control<Array<{ refresh_token: string; spent: boolean }>>('/market/refreshes'))
      .body as Array<{ spent: boolean }>;
    expect(refreshes.filter((entry) => entry.spent)).toHaveLength(1);
  });

  it("answers a send whose token another replica is still refreshing by the send's deadline, as not sent", async () => {
    const { workspaceId, created, send } = await connect();
    await buyerWrote();
    await control('/market/expire-tokens', { seller_id: SELLER });
    // Another replica took the claim to refresh, and its call to the token endpoint has not come back.
    const other = await store.claimConfig(workspaceId, created.id, 60_000);
    if (!other || other === 'taken') throw new Error('not claimed');
    const messageId = randomUUID();
    const answer = send('oi', { providerTimeoutMs: 500, messageId }).catch((error: unknown) => error);
    // Answered within its own bound, not the other replica's claim: ML refused the message (401), so
    // it was not sent, and a retry may send it (502, not the 504 of an outcome unknown).
    const settled = await Promise.race([
      answer,
      new Promise((resolve) => setTimeout(() => resolve('still waiting'), 5_000)),
    ]);
    expect(settled).toMatchObject({ status: 502, body: { error: platformTexts.providerFailed('market') } });
    expect(await store.findSend(workspaceId, messageId)).toBeUndefined();
    await store.settleClaim(workspaceId, created.id, other.claim);
  });

  it("keeps the pair a refresh got after the send's deadline: the spent refresh token is not lost", async () => {
    const { workspaceId, created, granted } = await connect();
    await buyerWrote();
    await control('/market/expire-tokens', { seller_id: SELLER });
    // ML's token endpoint answers after the send has given up, but within the provider bound.
    const tokenRequests: Array<string | undefined> = [];
    const slowTokens = createServer(async (req, res) => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      if (req.url?.includes('/oauth/token')) {
        tokenRequests.push(req.headers['content-type']);
        await new Promise((resolve) => setTimeout(resolve, 400));
      }
      const answer = await fetch(`${sandboxUrl}${req.url}`, {
        method: req.method,
        headers: Object.fromEntries(
          ['content-type', 'authorization'].flatMap((name) =>
            req.headers[name] ? [[name, req.headers[name]]] : [],
          ),
        ),
        ...(req.method === 'GET' ? {} : { body: Buffer.concat(chunks) }),
      });
      res.writeHead(answer.status, { 'content-type': 'application/json' }).end(await answer.text());
    });
    const proxyUrl = await serve(slowTokens);
    const stored = (await store.get(workspaceId, created.id))!;
    const config = { ...stored.config, base_url: `${proxyUrl}/market` } as Parameters<
      typeof marketAdapter.sendText
    >[0];
    const signal = AbortSignal.timeout(150);
    const sending = marketAdapter.sendText(
      config,
      { to: BUYER, text: 'oi' },
      {
        guard,
        workspaceId,
        signal,
        logger,
        oauth: oauthTokens(store, workspaceId, created.id, 5_000, { signal }),
        replyContexts: replyContexts(pool, created.id),
      },
    );
    await expect(sending).rejects.toMatchObject({ unsent: true });
    // The single-use refresh token was spent for a pair, and that pair is the one stored.
    const storedNow = async () => (await store.get(workspaceId, created.id))?.config.refresh_token;
    await waitFor(async () => (await storedNow()) !== granted.refresh_token, { timeoutMs: 5_000 });
    const { body: refreshes } =
      await control<Array<{ refresh_token: string; spent: boolean }>>('/market/refreshes');
    expect(refreshes.filter((entry) => entry.spent).map((entry) => entry.refresh_token)).toEqual([
      granted.refresh_token,
    ]);
    expect(await storedNow()).toBe(refreshes.find((entry) => !entry.spent)?.refresh_token);
    // As the form every example of ML's authentication guide sends.
    expect(tokenRequests).toEqual(['application/x-www-form-urlencoded']);
  });

  it('disconnects the integration when the refresh token is refused (invalid_grant)', async () => {
    const { workspaceId, created, send } = await connect();
    await buyerWrote();
    // Another holder of the same consent spent the refresh token: ours is no longer valid.
    const { refresh_token } = (await store.get(workspaceId, created.id))!.config as { refresh_token: string };
    const spent = await fetch(`${sandboxUrl}/market/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'refresh_token', ...APP, refresh_token }),
    });
    expect(spent.status).toBe(200);
    await control('/market/expire-tokens', { seller_id: SELLER });
    await expect(send('oi')).rejects.toMatchObject({
      status: 502,
      body: { error: platformTexts.providerCredentialsRejected('market') },
    });
    expect((await store.get(workspaceId, created.id))?.integration).toMatchObject({
      status: 'disconnected',
      status_reason: 'credentials_rejected',
    });
  });
});

describe('market: notifications ML gave up on (missed_feeds)', () => {
  const OTHER_SELLER = '277001234';
  const texts = async (workspaceId: string) =>
    (await outbox(workspaceId, 'inbound.message')).map((data) => data.text);

  it("takes in, once, a notification ML gave up on after its hour of retries, and not another seller's of the app", async () => {
    const { workspaceId, created } = await connect();
    // The connector out of reach for ML's hour: its notification URL answers 503 to every try.
    let refused = 0;
    const down = createServer((_req, res) => {
      refused++;
      res.writeHead(503).end();
    });
    const downUrl = await serve(down);
    await control('/market/applications', { ...APP, notification_url: `${downUrl}/notifications` });
    await control('/market/authorizations', { client_id: APP.client_id, seller_id: OTHER_SELLER });
    for (const [account, text] of [
      [SELLER, 'perdida'],
      [OTHER_SELLER, 'de outro vendedor'],
    ]) {
      const { body } = await control('/inbound', { channel: 'market', account, from: BUYER, text });
      expect(body).toMatchObject({ delivered_status: 503, redelivering: true });
    }
    await sandbox.redelivered();
    expect(refused).toBe(16);
    expect(await texts(workspaceId)).toEqual([]);

    const sweep = missedCallbacksSweep(
      { pool, store, logger, fetching, kept },
      defaultMissedCallbacksOptions,
    );
    closers.push(() => sweep.stop());
    await sweep.pass();
    expect(await texts(workspaceId)).toEqual(['perdida']);

    // Its next turn: ML still lists it, and it is not kept again.
    await pool.query('update integrations set missed_polled_at = null where id = $1', [created.id]);
    await sweep.pass();
    const { rows } = await pool.query('select 1 from callback_inbox where integration_id = $1', [created.id]);
    expect(rows).toEqual([]);
    expect(await texts(workspaceId)).toEqual(['perdida']);
  });

  it('reads every page ML lists, past its page of 50', async () => {
    const { workspaceId } = await connect();
    const down = createServer((_req, res) => res.writeHead(500).end());
    const downUrl = await serve(down);
    await control('/market/applications', { ...APP, notification_url: `${downUrl}/notifications` });
    const asked = Array.from({ length: 51 }, (_, i) => `pergunta ${i}`);
    for (const text of asked)
      await control('/inbound', { channel: 'market', account: SELLER, from: BUYER, text });
    await sandbox.redelivered();

    const sweep = missedCallbacksSweep(
      { pool, store, logger, fetching, kept },
      defaultMissedCallbacksOptions,
    );
    closers.push(() => sweep.stop());
    await sweep.pass();
    // In the order ML lost them, which its concurrent retries need not keep.
    expect((await texts(workspaceId)).sort()).toEqual(asked.sort());
  });

  it("reads at most 2,000 of a topic's lost notifications a poll, however many a tenant's base_url lists", async () => {
    // A tenant's own server as its base_url, listing a thousand lost notifications on every page.
    let calls = 0;
    const hostile = createServer((req, res) => {
      calls++;
      const topic = new URL(req.url ?? '/', 'http://x').searchParams.get('topic');
      const messages = Array.from({ length: 1_000 }, (_, i) => ({
        _id: `${calls}-${i}`,
        resource: topic === 'questions' ? `/questions/${calls * 10_000 + i}` : `m${calls}x${i}`,
        user_id: Number(SELLER),
        topic,
        application_id: Number(APP.client_id),
      }));
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ messages }));
    });
    const hostileUrl = await serve(hostile);
    const config = {
      base_url: hostileUrl,
      seller_id: SELLER,
      access_token: 'APP_USR-tenant',
      refresh_token: 'TG-tenant',
      ...APP,
    };
    const call = { guard, workspaceId: randomUUID(), logger, signal: AbortSignal.timeout(10_000) };
    let read = 0;
    for await (const page of marketAdapter.missedCallbacks!(config, call)) read += page.length;
    expect(read).toBe(4_000);
    expect(calls).toBe(4);
  });
});
