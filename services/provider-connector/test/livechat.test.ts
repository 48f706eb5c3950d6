import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { InProcessBus } from '@inbox/bus';
import { platformTexts } from '@inbox/contracts';
import { createPool, type Pool } from '@inbox/db';
import {
  createHttpApp,
  createLogger,
  finishHttpApp,
  prepareSchema,
  SecretBox,
  type ServiceEngine,
} from '@inbox/service-kit';
import { createDatabase } from '@inbox/testkit';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { LivechatLimits } from '../src/livechat/routes.js';
import { connectorService } from '../src/service.js';

// The live chat channel through the whole connector: two replicas on one database and one bus, the
// widget API called as a browser on an allowed (or another) origin calls it, visitors' messages read
// from the outbox as inbound.message, and operators' sends (cmd.connector.send-text) arriving on widget
// streams held by either replica. The streams' sweep is set to an hour, so only the bus notice can
// bring a message to an open stream during a test.

type Json = Record<string, unknown>;
const logger = createLogger('provider-connector', { level: 'silent' });
const site = 'https://shop.example';
const servers: Server[] = [];
const engines: ServiceEngine[] = [];
const pools: Pool[] = [];
const bus = new InProcessBus();
const replicas: string[] = [];
let integrationId = '';
const workspaceId = randomUUID();

let databaseUrl = '';
const encryptionKey = SecretBox.generateKey();

/** A connector replica on the test's database, with the widget's budgets given; its URL. */
async function startReplica(livechatLimits: Partial<LivechatLimits>): Promise<string> {
  const definition = connectorService({
    encryptionKey,
    publicConnectorUrl: 'http://127.0.0.1:9',
    livechatLimits,
    livechatStreams: { sweepMs: 3_600_000 },
  });
  const pool = createPool({ url: databaseUrl, schema: 'connector' });
  pools.push(pool);
  await prepareSchema(pool, definition);
  const engine = await definition.create({ pool, bus, logger });
  await engine.start();
  engines.push(engine);
  const app = createHttpApp({ logger, parseJson: false });
  engine.routes?.(app);
  finishHttpApp(app, logger);
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  servers.push(server);
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

beforeAll(async () => {
  databaseUrl = await createDatabase(inject('infra').postgresAdminUrl);
  for (let i = 0; i < 2; i++)
    replicas.push(await startReplica({ sessionsPerMinute: 5, messagesPerSession: 4 }));
  const created = await bus.request('cmd.connector.create-integration', {
    workspace_id: workspaceId,
    channel: 'livechat',
    name: 'Site chat',
    config: { name: 'Shop', allowed_origins: `${site}, https://other.example` },
  });
  integrationId = created.id;
});

afterAll(async () => {
  for (const server of servers) {
    server.closeAllConnections();
    server.close();
  }
  for (const engine of engines) await engine.stop?.();
  for (const pool of pools) await pool.end();
});

const widget = (replica: number, action: string, init: RequestInit & { origin?: string | null } = {}) => {
  const { origin = site, ...rest } = init;
  const headers = new Headers(rest.headers);
  if (origin !== null) headers.set('origin', origin);
  return fetch(`${replicas[replica]}/livechat/${integrationId}/${action}`, { ...rest, headers });
};

/** A visitor's new session; from an address of its own when given (each has a budget of new sessions). */
async function newSession(
  name = 'Ana',
  replica = 0,
  address?: string,
): Promise<{ session_id: string; token: string }> {
  const res = await widget(replica, 'sessions', {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(address ? { 'x-forwarded-for': address } : {}) },
    body: JSON.stringify({ name }),
  });
  expect(res.status).toBe(201);
  return (await res.json()) as { session_id: string; token: string };
}

const post = (token: string, text: unknown, replica = 0) =>
  widget(replica, 'messages', {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ text }),
  });

/** An open widget stream, read event by event. */
async function openStream(token: string, replica: number, lastEventId?: string) {
  const headers: Record<string, string> = { authorization: `Bearer ${token}` };
  if (lastEventId) headers['last-event-id'] = lastEventId;
  const controller = new AbortController();
  const res = await widget(replica, 'stream', { headers, signal: controller.signal });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  return {
    async next(): Promise<{ id: string; data: Json }> {
      for (;;) {
        const end = buffer.indexOf('\n\n');
        if (end !== -1) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const id = /^id: (.*)$/m.exec(block)?.[1];
          const data = /^data: (.*)$/m.exec(block)?.[1];
          if (id && data) return { id, data: JSON.parse(data) as Json };
          continue;
        }
        const { value, done } = await reader.read();
        if (done) throw new Error('stream ended');
        buffer += value;
      }
    },
    close: () => controller.abort(),
  };
}

async function outbox(type: string): Promise<Json[]> {
  const { rows } = await pools[0]!.query<{ data: Json }>(
    'select data from outbox where workspace_id = $1 and type = $2 order by seq',
    [workspaceId, type],
  );
  return rows.map((row) => row.data);
}

describe('the live chat widget API', () => {
  it('takes a visitor message in as inbound.message keyed by the session, with no phone', async () => {
    const { session_id, token } = await newSession('  Ana <b>Souza</b> ');
    const res = await post(token, 'Olá, preciso de ajuda');
    expect(res.status).toBe(202);
    expect(res.headers.get('access-control-allow-origin')).toBe(site);
    const { id } = (await res.json()) as { id: string };
    const events = await outbox('inbound.message');
    expect(events.find((event) => event.provider_message_id === id)).toEqual({
      workspace_id: workspaceId,
      integration: { id: integrationId, channel: 'livechat', provider: 'livechat' },
      provider_message_id: id,
      from: null,
      from_user_id: session_id,
      name: 'Ana <b>Souza</b>',
      text: 'Olá, preciso de ajuda',
      type: 'text',
      sent_at: expect.any(String),
    });
    // Only the token's digest is stored.
    const { rows } = await pools[0]!.query('select * from livechat_sessions where id = $1', [session_id]);
    expect(JSON.stringify(rows)).not.toContain(token);
  });

  it('answers a preflight from an allowed origin and refuses any other origin', async () => {
    const preflight = await widget(1, 'messages', {
      method: 'OPTIONS',
      headers: {
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization,content-type',
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe(site);
    expect(preflight.headers.get('access-control-allow-headers')).toMatch(/Authorization/);

    for (const origin of ['https://evil.example', 'null', 'https://shop.example.evil', `${site}/`, null]) {
      const refused = await widget(0, 'sessions', {
        method: 'POST',
        origin,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'Eve' }),
      });
      expect(refused.status).toBe(403);
      expect(refused.headers.get('access-control-allow-origin')).toBeNull();
      expect(await refused.json()).toEqual({ error: platformTexts.livechatOriginRefused });
    }
    const refusedPreflight = await widget(0, 'sessions', {
      method: 'OPTIONS',
      origin: 'https://evil.example',
    });
    expect(refusedPreflight.status).toBe(403);
    expect(refusedPreflight.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('refuses bad tokens, bad bodies, oversized bodies and unknown integrations', async () => {
    const { token } = await newSession();
    expect((await post('x'.repeat(43), 'hi')).status).toBe(401);
    expect((await post(token, '')).status).toBe(400);
    expect((await post(token, 42)).status).toBe(400);
    expect(await (await post(token, 'y'.repeat(4097))).json()).toEqual({
      error: platformTexts.livechatTextInvalid,
    });
    // Characters, not UTF-16 units: 80 emoji are a name of 80 characters, 4,096 a text of 4,096.
    const emojiSession = await newSession('😀'.repeat(80), 0, '192.0.2.9');
    expect((await post(emojiSession.token, '😀'.repeat(4096))).status).toBe(202);
    expect(await (await post(emojiSession.token, '😀'.repeat(4097))).json()).toEqual({
      error: platformTexts.livechatTextInvalid,
    });
    const huge = await post(token, 'z'.repeat(30_000));
    expect(huge.status).toBe(413);
    const noName = await widget(0, 'sessions', { method: 'POST', body: JSON.stringify({ name: '\u0000 ' }) });
    expect(await noName.json()).toEqual({ error: platformTexts.livechatNameInvalid });
    const unknown = await fetch(`${replicas[0]}/livechat/${randomUUID()}/sessions`, {
      method: 'POST',
      headers: { origin: site },
      body: '{}',
    });
    expect(unknown.status).toBe(404);
  });

  it('limits messages per session', async () => {
    const { token } = await newSession('Rui');
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) statuses.push((await post(token, `m${i}`)).status);
    expect(statuses).toEqual([202, 202, 202, 202, 429]);
  });

  it('delivers an operator send to streams on both replicas, and replays what a reconnect missed', async () => {
    const { session_id, token } = await newSession('Bia');
    const first = await openStream(token, 0);
    const second = await openStream(token, 1);
    await post(token, 'oi', 1);
    const own = await first.next();
    expect(own.data).toMatchObject({ author: 'visitor', text: 'oi' });
    expect((await second.next()).data).toMatchObject({ author: 'visitor', text: 'oi' });

    const messageId = randomUUID();
    const sent = await bus.request('cmd.connector.send-text', {
      workspace_id: workspaceId,
      integration_id: integrationId,
      message_id: messageId,
      to: null,
      to_user_id: session_id,
      text: 'Olá Bia! <script>alert(1)</script>',
    });
    expect(sent.provider_message_id).toBe(messageId);
    const reply = await first.next();
    expect(reply.data).toEqual({
      id: messageId,
      author: 'operator',
      text: 'Olá Bia! <script>alert(1)</script>',
      sent_at: expect.any(String),
    });
    expect((await second.next()).data).toMatchObject({ id: messageId, author: 'operator' });
    first.close();
    second.close();

    await bus.request('cmd.connector.send-text', {
      workspace_id: workspaceId,
      integration_id: integrationId,
      message_id: randomUUID(),
      to: null,
      to_user_id: session_id,
      text: 'você ainda está aí?',
    });
    const resumed = await openStream(token, 1, reply.id);
    expect((await resumed.next()).data).toMatchObject({ author: 'operator', text: 'você ainda está aí?' });
    resumed.close();
    const fromStart = await openStream(token, 0);
    expect((await fromStart.next()).data).toMatchObject({ author: 'visitor', text: 'oi' });
    fromStart.close();
  });

  it('refuses a send to a session of another integration', async () => {
    await expect(
      bus.request('cmd.connector.send-text', {
        workspace_id: workspaceId,
        integration_id: integrationId,
        message_id: randomUUID(),
        to: null,
        to_user_id: randomUUID(),
        text: 'hello?',
      }),
    ).rejects.toMatchObject({ status: 502 });
  });

  it('serves the widget script, its stylesheet and the demo page', async () => {
    const script = await fetch(`${replicas[0]}/livechat/widget.js`);
    expect(script.headers.get('content-type')).toMatch(/javascript/);
    expect(await script.text()).toContain('data-integration');
    expect((await fetch(`${replicas[0]}/livechat/widget.css`)).headers.get('content-type')).toMatch(/css/);
    const demo = await fetch(`${replicas[0]}/livechat/${integrationId}/demo`);
    expect(await demo.text()).toContain(`data-integration="${integrationId}"`);
  });

  it("budgets an address's new sessions by integration, whichever of its origins the address names", async () => {
    // On the second replica, whose budget no other test spent; five a minute, alternating the two origins.
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) {
      const res = await widget(1, 'sessions', {
        method: 'POST',
        origin: i % 2 === 0 ? site : 'https://other.example',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name: `V${i}` }),
      });
      statuses.push(res.status);
    }
    expect(statuses).toEqual([201, 201, 201, 201, 201, 429]);
  });

  it("budgets an integration's messages whatever Origin each names, and a workspace's across its widgets", async () => {
    const replica = await startReplica({
      messagesPerSession: 100,
      messagesPerIntegration: 3,
      messagesPerWorkspace: 5,
    });
    const tenant = randomUUID();
    const origins = Array.from({ length: 4 }, (_, i) => `https://shop${i}.example`);
    const chats = [];
    for (const name of ['one', 'two']) {
      const created = await bus.request('cmd.connector.create-integration', {
        workspace_id: tenant,
        channel: 'livechat',
        name,
        config: { name, allowed_origins: origins.join(',') },
      });
      chats.push(created.id);
    }
    const call = (chat: string, action: string, origin: string, body: Json, token?: string) =>
      fetch(`${replica}/livechat/${chat}/${action}`, {
        method: 'POST',
        headers: {
          origin,
          'content-type': 'application/json',
          ...(token ? { authorization: `Bearer ${token}` } : {}),
        },
        body: JSON.stringify(body),
      });
    const statuses = async (chat: string) => {
      const { token } = (await (await call(chat, 'sessions', origins[0]!, { name: 'V' })).json()) as {
        token: string;
      };
      const answered: number[] = [];
      // Each message names another listed origin, as any client other than a browser may.
      for (const origin of origins)
        answered.push((await call(chat, 'messages', origin, { text: 'oi' }, token)).status);
      return answered;
    };
    expect(await statuses(chats[0]!)).toEqual([202, 202, 202, 429]);
    // The workspace's second widget has two left of the workspace's five.
    expect(await statuses(chats[1]!)).toEqual([202, 202, 429, 429]);
  });

  it("budgets an integration's new sessions from every address, and a workspace's across its widgets", async () => {
    const replica = await startReplica({
      sessionsPerMinute: 100,
      sessionsPerIntegration: 3,
      sessionsPerWorkspace: 5,
    });
    const tenant = randomUUID();
    const chats: string[] = [];
    for (const name of ['one', 'two']) {
      const created = await bus.request('cmd.connector.create-integration', {
        workspace_id: tenant,
        channel: 'livechat',
        name,
        config: { name, allowed_origins: site },
      });
      chats.push(created.id);
    }
    let address = 0;
    // Each session from another address, as a client rotating its addresses opens them.
    const open = async (chat: string) => {
      const answered: number[] = [];
      for (let i = 0; i < 4; i++) {
        const res = await fetch(`${replica}/livechat/${chat}/sessions`, {
          method: 'POST',
          headers: {
            origin: site,
            'content-type': 'application/json',
            'x-forwarded-for': `198.51.100.${++address}`,
          },
          body: JSON.stringify({ name: 'V' }),
        });
        answered.push(res.status);
        if (res.status === 429) {
          expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
          expect(await res.json()).toEqual({ error: platformTexts.livechatTooMany });
        }
      }
      return answered;
    };
    // Requests that open nothing spend nothing.
    for (let i = 0; i < 3; i++) {
      const nameless = await fetch(`${replica}/livechat/${chats[0]}/sessions`, {
        method: 'POST',
        headers: { origin: site, 'content-type': 'application/json', 'x-forwarded-for': `203.0.113.${i}` },
        body: JSON.stringify({ name: ' ' }),
      });
      expect(nameless.status).toBe(400);
    }
    expect(await open(chats[0]!)).toEqual([201, 201, 201, 429]);
    // The workspace's second widget has two left of the workspace's five.
    expect(await open(chats[1]!)).toEqual([201, 201, 429, 429]);
    // Another workspace's widget on the same replica opens its sessions as before.
    expect((await newSession('Bia', 1, '192.0.2.7')).token).toBeTruthy();
  });

  it('ends a session a month after its last message: its token is refused, and so is a send to it', async () => {
    const operatorSends = (sessionId: string, text: string) =>
      bus.request('cmd.connector.send-text', {
        workspace_id: workspaceId,
        integration_id: integrationId,
        message_id: randomUUID(),
        to: null,
        to_user_id: sessionId,
        text,
      });
    const quiet = await newSession('Caio', 1, '192.0.2.8');
    expect((await post(quiet.token, 'oi', 1)).status).toBe(202);
    const talking = await newSession('Duda', 1, '192.0.2.8');
    await operatorSends(talking.session_id, 'Olá, Duda');
    // Both opened a month ago; the visitor wrote to one a month ago, an operator to the other yesterday.
    await pools[0]!.query(
      `update livechat_sessions set created_at = now() - interval '31 days' where id = any($1)`,
      [[quiet.session_id, talking.session_id]],
    );
    await pools[0]!.query(
      `update livechat_messages set created_at = now() - case session_id when $1 then interval '30 days 1 minute'
         else interval '1 day' end where session_id = any($2)`,
      [quiet.session_id, [quiet.session_id, talking.session_id]],
    );

    const ended = await post(quiet.token, 'ainda aí?', 1);
    expect(ended.status).toBe(401);
    expect(await ended.json()).toEqual({ error: platformTexts.livechatSessionInvalid });
    const stream = await widget(0, 'stream', { headers: { authorization: `Bearer ${quiet.token}` } });
    expect(stream.status).toBe(401);
    await expect(operatorSends(quiet.session_id, 'Ainda precisa de ajuda?')).rejects.toMatchObject({
      status: 502,
    });
    const { rows } = await pools[0]!.query('select 1 from livechat_messages where session_id = $1', [
      quiet.session_id,
    ]);
    expect(rows).toHaveLength(1);

    expect((await post(talking.token, 'oi!', 1)).status).toBe(202);
  });

  it("keeps a site's visitors served while one address floods its public integration id", async () => {
    // Preflights from one client behind the ingress, more than an address's burst (1,000), on the second
    // replica; its last ones are refused.
    const flood = (n: number) =>
      Promise.all(
        Array.from({ length: n }, () =>
          widget(1, 'messages', {
            method: 'OPTIONS',
            headers: { 'access-control-request-method': 'POST', 'x-forwarded-for': '203.0.113.5' },
          }).then((res) => res.status),
        ),
      );
    const statuses: number[] = [];
    for (let round = 0; round < 21; round++) statuses.push(...(await flood(50)));
    expect(statuses.filter((status) => status === 429).length).toBeGreaterThan(0);
    // A visitor elsewhere opens a session on the same replica meanwhile.
    const visitor = await widget(1, 'sessions', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-forwarded-for': '198.51.100.20' },
      body: JSON.stringify({ name: 'Bia' }),
    });
    expect(visitor.status).toBe(201);
  });
});
