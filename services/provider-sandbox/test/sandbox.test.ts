import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createEvolutionInstance, createSandbox, type Sandbox } from '../src/index.js';
import { IssuedMessages } from '../src/issued-messages.js';

interface ReceivedWebhook {
  path: string;
  headers: IncomingHttpHeaders;
  body: unknown;
}

/** A stand-in for the connector: records every webhook and answers 202 (so the status is visibly relayed). */
function startReceiver(): Promise<{ server: Server; url: string; received: ReceivedWebhook[] }> {
  const received: ReceivedWebhook[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      received.push({
        path: req.url ?? '',
        headers: req.headers,
        body: JSON.parse(Buffer.concat(chunks).toString('utf8')),
      });
      res.writeHead(202).end();
    });
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      resolve({ server, url: `http://127.0.0.1:${port}`, received });
    });
  });
}

function listen(sandbox: Sandbox): Promise<{ server: Server; url: string }> {
  return new Promise((resolve) => {
    const server = sandbox.app.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      resolve({ server, url: `http://127.0.0.1:${port}` });
    });
  });
}

function close(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve, reject) => server.close((error) => (error ? reject(error) : resolve())));
}

const API_KEY = 'key-123';
const INSTANCE = 'shop-1';

describe('provider sandbox', () => {
  const sandbox = createSandbox();
  let base = '';
  let sandboxServer: Server;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;

  beforeAll(async () => {
    const started = await listen(sandbox);
    sandboxServer = started.server;
    base = started.url;
    receiver = await startReceiver();
  });

  afterAll(async () => {
    await close(sandboxServer);
    await close(receiver.server);
  });

  beforeEach(async () => {
    sandbox.reset();
    receiver.received.length = 0;
    // Evolution knows only instances an operator created.
    await createEvolutionInstance(base, INSTANCE, API_KEY);
    await createEvolutionInstance(base, 'shop-2', API_KEY);
  });

  function post(path: string, body: unknown, headers: Record<string, string> = {}, signal?: AbortSignal) {
    return fetch(`${base}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
      signal,
    });
  }

  /** `null` sends no apikey header at all. */
  function sendText(instance: string, body: unknown, apiKey: string | null = API_KEY, signal?: AbortSignal) {
    return post(
      `/alt-a/message/sendText/${instance}`,
      body,
      apiKey === null ? {} : { apikey: apiKey },
      signal,
    );
  }

  async function sent(query = ''): Promise<Array<Record<string, unknown>>> {
    const res = await fetch(`${base}/_sandbox/sent${query}`);
    expect(res.status).toBe(200);
    return (await res.json()) as Array<Record<string, unknown>>;
  }

  function setWebhook(instance: string, url: string, extra: Record<string, unknown> = {}) {
    return post(
      `/alt-a/webhook/set/${instance}`,
      {
        webhook: {
          enabled: true,
          url,
          events: ['MESSAGES_UPSERT'],
          byEvents: false,
          base64: false,
          ...extra,
        },
      },
      { apikey: API_KEY },
    );
  }

  describe('alt-a sendText', () => {
    it('answers 201 in the Evolution shape and records the request', async () => {
      const before = Math.floor(Date.now() / 1000);
      const body = { number: '5511999990000', text: 'hello', delay: 1200, linkPreview: false };
      const res = await sendText(INSTANCE, body);

      expect(res.status).toBe(201);
      const answer = (await res.json()) as {
        key: { remoteJid: string; fromMe: boolean; id: string };
        messageTimestamp: number;
      };
      expect(answer).toEqual({
        key: { remoteJid: '5511999990000@s.whatsapp.net', fromMe: true, id: expect.any(String) },
        pushName: 'Você',
        status: 'PENDING',
        message: { conversation: 'hello' },
        messageType: 'conversation',
        messageTimestamp: expect.any(Number),
        instanceId: expect.stringMatching(/^[0-9a-f-]{36}$/),
        source: 'web',
      });
      expect(answer.key.id).toMatch(/^3EB0[0-9A-F]{18}$/);
      expect(answer.messageTimestamp).toBeGreaterThanOrEqual(before);
      expect(answer.messageTimestamp).toBeLessThanOrEqual(Math.floor(Date.now() / 1000));

      const log = await sent();
      expect(log).toHaveLength(1);
      expect(log[0]).toEqual({
        channel: 'alt-a',
        account: INSTANCE,
        to: '5511999990000',
        method: 'POST',
        path: `/alt-a/message/sendText/${INSTANCE}`,
        body,
        provider_message_id: answer.key.id,
        received_at: expect.any(String),
      });
      expect(Number.isNaN(Date.parse(String(log[0]?.received_at)))).toBe(false);
    });

    it('lists sends oldest first and filters by recipient digits and channel', async () => {
      expect((await sendText(INSTANCE, { number: '5511111111111', text: 'one' })).status).toBe(201);
      expect((await sendText(INSTANCE, { number: '5522222222222', text: 'two' })).status).toBe(201);
      expect((await sendText(INSTANCE, { number: '5511111111111', text: 'three' })).status).toBe(201);

      const all = await sent();
      expect(all.map((entry) => (entry.body as { text: string }).text)).toEqual(['one', 'two', 'three']);

      const toFirst = await sent(`?to=${encodeURIComponent('+5511111111111')}`);
      expect(toFirst.map((entry) => (entry.body as { text: string }).text)).toEqual(['one', 'three']);

      expect(await sent('?channel=alt-a&to=5522222222222')).toHaveLength(1);
      expect(await sent('?channel=chat-official')).toEqual([]);
      expect(await sent('?to=5599999999999')).toEqual([]);
    });

    it('refuses a call without apikey with 401', async () => {
      const res = await sendText(INSTANCE, { number: '5511999990000', text: 'hello' }, null);
      expect(res.status).toBe(401);
      expect(await res.json()).toEqual({
        status: 401,
        error: 'Unauthorized',
        response: { message: 'Unauthorized' },
      });
      expect(await sent()).toEqual([]);
    });

    it("refuses a key other than the instance's token with 401, and an instance never created with 404 first", async () => {
      const res = await sendText(INSTANCE, { number: '5511999990000', text: 'second' }, 'other-key');
      expect(res.status).toBe(401);
      expect(await res.json()).toEqual({
        status: 401,
        error: 'Unauthorized',
        response: { message: 'Unauthorized' },
      });
      // instanceExistsGuard runs before the apikey and the body are looked at.
      const unknown = await sendText('shop-9', {}, null);
      expect(unknown.status).toBe(404);
      expect(await unknown.json()).toEqual({
        status: 404,
        error: 'Not Found',
        response: { message: ['The "shop-9" instance does not exist'] },
      });
      expect((await setWebhook('shop-9', `${receiver.url}/hooks`)).status).toBe(404);
      // Each instance has its own token.
      expect(
        (await post('/_sandbox/alt-a/instances', { instance: 'shop-3', token: 'other-key' })).status,
      ).toBe(200);
      expect((await sendText('shop-3', { number: '5511999990000', text: 'x' }, 'other-key')).status).toBe(
        201,
      );
      expect(
        (await post('/_sandbox/alt-a/instances', { instance: 'shop-3', token: 'third-key' })).status,
      ).toBe(403);
      expect(await sent()).toHaveLength(1);
      // Deleted (instance.controller.ts deleteInstance), it is the guard's 404 again.
      const deleted = await fetch(`${base}/alt-a/instance/delete/shop-3`, {
        method: 'DELETE',
        headers: { apikey: 'other-key' },
      });
      expect(await deleted.json()).toEqual({
        status: 'SUCCESS',
        error: false,
        response: { message: 'Instance deleted' },
      });
      expect((await sendText('shop-3', { number: '5511999990000', text: 'x' }, 'other-key')).status).toBe(
        404,
      );
    });

    // jsonschema's words, as Evolution passes them on (issue #2583 quotes `instance requires property "text"`).
    it.each([
      [{ text: 'hello' }, ['instance requires property "number"']],
      [{}, ['instance requires property "number"', 'instance requires property "text"']],
      [{ number: 5511999990000, text: 'hello' }, ['Invalid format']],
      [{ number: '5511999990000' }, ['instance requires property "text"']],
      [{ number: '5511999990000', text: 7 }, ['text is not of a type(s) string']],
      [{ number: '5511999990000', text: '  ' }, ['Text is required']],
      [{ number: '5511999990000', text: 'x', delay: 1.5 }, ['Enter a value in milliseconds']],
    ])('answers 400 for an invalid body %j', async (body, problems) => {
      const res = await sendText(INSTANCE, body);
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({
        status: 400,
        error: 'Bad Request',
        response: { message: problems },
      });
      expect(await sent()).toEqual([]);
    });

    it('takes a formatted number as createJid cleans it, and logs its digits', async () => {
      const res = await sendText(INSTANCE, { number: '+55 (11) 99999-0000', text: 'hello' });
      expect(res.status).toBe(201);
      expect(await res.json()).toMatchObject({ key: { remoteJid: '5511999990000@s.whatsapp.net' } });
      expect((await sent())[0]).toMatchObject({ to: '5511999990000' });
    });
  });

  describe('faults', () => {
    it('fails sends with the provider error shape until turned off', async () => {
      const on = await post('/_sandbox/faults', { channel: 'alt-a', mode: 'error', status: 503 });
      expect(on.status).toBe(200);
      expect(await on.json()).toEqual({ ok: true });

      const failed = await sendText(INSTANCE, { number: '5511999990000', text: 'hello' });
      expect(failed.status).toBe(503);
      expect(await failed.json()).toMatchObject({ status: 503, response: { message: ['sandbox fault'] } });

      expect((await post('/_sandbox/faults', { channel: 'alt-a', mode: 'off' })).status).toBe(200);
      expect((await sendText(INSTANCE, { number: '5511999990000', text: 'hello' })).status).toBe(201);
      expect(await sent()).toHaveLength(1);
    });

    it('defaults to 500 and scopes an account fault to that account', async () => {
      await post('/_sandbox/faults', { channel: 'alt-a', account: INSTANCE, mode: 'error' });

      const failed = await sendText(INSTANCE, { number: '5511999990000', text: 'hello' });
      expect(failed.status).toBe(500);
      expect(await failed.json()).toEqual({
        status: 500,
        error: 'Internal Server Error',
        response: { message: ['sandbox fault'] },
      });
      expect((await sendText('shop-2', { number: '5511999990000', text: 'hello' })).status).toBe(201);

      await post('/_sandbox/faults', { channel: 'alt-a', account: INSTANCE, mode: 'off' });
      expect((await sendText(INSTANCE, { number: '5511999990000', text: 'hello' })).status).toBe(201);
    });

    it('holds the call without answering in timeout mode', async () => {
      await post('/_sandbox/faults', { channel: 'alt-a', mode: 'timeout' });
      const controller = new AbortController();
      const pending = sendText(
        INSTANCE,
        { number: '5511999990000', text: 'hello' },
        API_KEY,
        controller.signal,
      );
      // Observed, so the rejection from the abort below is never unhandled.
      const settled = pending.then(
        () => 'answered',
        () => 'aborted',
      );

      const outcome = await Promise.race([
        settled,
        new Promise((resolve) => setTimeout(resolve, 300, 'held')),
      ]);
      expect(outcome).toBe('held');

      controller.abort();
      expect(await settled).toBe('aborted');
      expect(await sent()).toEqual([]);
    });

    it('refuses an invalid fault body with 400', async () => {
      for (const body of [
        { channel: 'alt-a', mode: 'explode' },
        { channel: 'nowhere', mode: 'error' },
        { mode: 'error' },
        { channel: 'alt-a', mode: 'error', status: 200 },
      ]) {
        const res = await post('/_sandbox/faults', body);
        expect(res.status).toBe(400);
        const answer = (await res.json()) as { error: unknown };
        expect(typeof answer.error).toBe('string');
      }
      expect((await sendText(INSTANCE, { number: '5511999990000', text: 'hello' })).status).toBe(201);
    });

    it('refuses a key a control does not take, so that a misspelt one is not dropped unseen', async () => {
      const res = await post('/_sandbox/inbound', {
        channel: 'alt-a',
        account: INSTANCE,
        from: '5511933330001',
        text: 'oi',
        addressingMode: 'lid-only',
      });
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({ error: 'unknown key "addressingMode"' });
      const query = await fetch(`${base}/_sandbox/sent?to=5511933330001&canal=alt-a`);
      expect(query.status).toBe(400);
    });
  });

  describe('inbound', () => {
    it('delivers messages.upsert to the webhook set for the instance', async () => {
      // The first apikey an instance sees is the one Evolution would put in its webhooks.
      const set = await setWebhook(INSTANCE, `${receiver.url}/hooks/alt-a`);
      expect(set.status).toBe(201);
      // The Webhook row as Evolution keeps it.
      expect(await set.json()).toEqual({
        id: expect.stringMatching(/^c[0-9a-z]{24}$/),
        url: `${receiver.url}/hooks/alt-a`,
        headers: {},
        enabled: true,
        events: ['MESSAGES_UPSERT'],
        webhookByEvents: false,
        webhookBase64: false,
        createdAt: expect.any(String),
        updatedAt: expect.any(String),
        instanceId: expect.stringMatching(/^[0-9a-f-]{36}$/),
      });

      const before = Math.floor(Date.now() / 1000);
      const res = await post('/_sandbox/inbound', {
        channel: 'alt-a',
        account: INSTANCE,
        from: '+55 11 98888-7777',
        name: 'Ana',
        text: 'oi',
      });
      expect(res.status).toBe(200);
      const answer = (await res.json()) as { provider_message_id: string };
      expect(answer).toEqual({ ok: true, delivered_status: 202, provider_message_id: expect.any(String) });

      expect(receiver.received).toHaveLength(1);
      const [webhook] = receiver.received;
      expect(webhook?.path).toBe('/hooks/alt-a');
      expect(webhook?.headers['content-type']).toContain('application/json');
      const payload = webhook?.body as {
        data: { key: { id: string }; messageTimestamp: number };
        date_time: string;
      };
      // sendDataWebhook's envelope and prepareMessage's data; `apikey` is null by default.
      expect(payload).toEqual({
        event: 'messages.upsert',
        instance: INSTANCE,
        data: {
          // Baileys 7 names the chat's LID beside its number.
          key: {
            remoteJid: '5511988887777@s.whatsapp.net',
            fromMe: false,
            id: expect.any(String),
            remoteJidAlt: expect.stringMatching(/^\d+@lid$/),
            addressingMode: 'pn',
          },
          pushName: 'Ana',
          status: 'DELIVERY_ACK',
          message: { conversation: 'oi' },
          messageType: 'conversation',
          messageTimestamp: expect.any(Number),
          instanceId: expect.stringMatching(/^[0-9a-f-]{36}$/),
          source: 'android',
        },
        destination: `${receiver.url}/hooks/alt-a`,
        date_time: expect.any(String),
        sender: expect.stringMatching(/^55\d{11}@s\.whatsapp\.net$/),
        server_url: 'http://localhost:8080',
        apikey: null,
      });
      expect(payload.data.key.id).toMatch(/^[0-9A-F]{32}$/);
      expect(answer.provider_message_id).toBe(payload.data.key.id);
      expect(payload.data.messageTimestamp).toBeGreaterThanOrEqual(before);
      expect(Number.isNaN(Date.parse(payload.date_time))).toBe(false);
    });

    it('answers 409 when the instance has no webhook, and 404 when there is no such instance', async () => {
      const inbound = (account: string) =>
        post('/_sandbox/inbound', { channel: 'alt-a', account, from: '5511', text: 'oi' });
      const res = await inbound('shop-2');
      expect(res.status).toBe(409);
      expect(await res.json()).toEqual({ error: 'no webhook registered for alt-a account shop-2' });
      const none = await inbound('no-such');
      expect(none.status).toBe(404);
      expect(await none.json()).toEqual({
        error:
          'alt-a has no instance "no-such": create it with POST /_sandbox/alt-a/instances, as an operator does in Evolution\'s manager',
      });
      expect(receiver.received).toEqual([]);
    });

    it('answers 502 when the webhook cannot be reached', async () => {
      const gone = await startReceiver();
      await close(gone.server);
      expect((await setWebhook(INSTANCE, `${gone.url}/hooks`)).status).toBe(201);

      const res = await post('/_sandbox/inbound', {
        channel: 'alt-a',
        account: INSTANCE,
        from: '5511',
        text: 'oi',
      });
      expect(res.status).toBe(502);
      expect(((await res.json()) as { error: string }).error).toContain(gone.url);
    });
  });

  it('forgets sends, faults, webhooks and instances on reset', async () => {
    expect((await setWebhook(INSTANCE, `${receiver.url}/hooks`)).status).toBe(201);
    expect((await sendText(INSTANCE, { number: '5511999990000', text: 'hello' })).status).toBe(201);
    await post('/_sandbox/faults', { channel: 'alt-a', mode: 'error' });

    const res = await post('/_sandbox/reset', {});
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ok: true });

    expect(await sent()).toEqual([]);
    expect((await sendText(INSTANCE, { number: '5511999990000', text: 'again' })).status).toBe(404);
    // Created again, with no fault and no webhook.
    await createEvolutionInstance(base, INSTANCE, 'new-key');
    expect((await sendText(INSTANCE, { number: '5511999990000', text: 'again' }, 'new-key')).status).toBe(
      201,
    );
    const inbound = await post('/_sandbox/inbound', {
      channel: 'alt-a',
      account: INSTANCE,
      from: '5511',
      text: 'oi',
    });
    expect(inbound.status).toBe(409);
  });

  it('answers unknown routes with 404 JSON', async () => {
    const res = await fetch(`${base}/nowhere`);
    expect(res.status).toBe(404);
    expect(((await res.json()) as { error: string }).error).toEqual(expect.any(String));
  });
});

describe('provider sandbox timeout fault release', () => {
  it('answers 504 once the hold time has passed', async () => {
    const sandbox = createSandbox({ faultHoldMs: 100 });
    const { server, url } = await listen(sandbox);
    await createEvolutionInstance(url, INSTANCE, API_KEY);
    try {
      const fault = await fetch(`${url}/_sandbox/faults`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ channel: 'alt-a', mode: 'timeout' }),
      });
      expect(fault.status).toBe(200);

      const res = await fetch(`${url}/alt-a/message/sendText/${INSTANCE}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', apikey: API_KEY },
        body: JSON.stringify({ number: '5511999990000', text: 'hello' }),
      });
      expect(res.status).toBe(504);
      expect(await res.json()).toMatchObject({ status: 504, response: { message: ['sandbox fault'] } });
    } finally {
      await close(server);
    }
  });
});

describe('provider sandbox webhook transport', () => {
  it('delivers inbound webhooks through the given fetchImpl, per event when the webhook asks for it', async () => {
    const calls: Array<{ url: string; body: string }> = [];
    const fetchImpl: typeof fetch = async (input, init) => {
      calls.push({ url: String(input), body: String(init?.body) });
      return new Response(null, { status: 204 });
    };
    const sandbox = createSandbox({ fetchImpl });
    const { server, url } = await listen(sandbox);
    await createEvolutionInstance(url, INSTANCE, API_KEY);
    try {
      const set = await fetch(`${url}/alt-a/webhook/set/${INSTANCE}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', apikey: API_KEY },
        body: JSON.stringify({
          webhook: {
            enabled: true,
            url: 'http://connector.test/alt-a/',
            events: ['MESSAGES_UPSERT'],
            byEvents: true,
          },
        }),
      });
      expect(set.status).toBe(201);

      const res = await fetch(`${url}/_sandbox/inbound`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ channel: 'alt-a', account: INSTANCE, from: '5511977776666', text: 'oi' }),
      });
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({
        ok: true,
        delivered_status: 204,
        provider_message_id: JSON.parse(calls[0]?.body ?? '').data.key.id,
      });
      expect(calls).toHaveLength(1);
      // Evolution appends `/${event}` to the URL as given, trailing slash and all.
      expect(calls[0]?.url).toBe('http://connector.test/alt-a//messages-upsert');
      expect(JSON.parse(calls[0]?.body ?? '')).toMatchObject({
        event: 'messages.upsert',
        instance: INSTANCE,
      });
    } finally {
      await close(server);
    }
  });
});

describe('provider sandbox sent log limit', () => {
  it('keeps the newest sends up to its limit, oldest first, and says how many it let go', async () => {
    const sandbox = createSandbox({ sentLogLimit: 5 });
    const { server, url } = await listen(sandbox);
    await createEvolutionInstance(url, INSTANCE, API_KEY);
    const send = (text: string) =>
      fetch(`${url}/alt-a/message/sendText/${INSTANCE}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', apikey: API_KEY },
        body: JSON.stringify({ number: '5511111111111', text }),
      });
    const log = async () => {
      const res = await fetch(`${url}/_sandbox/sent`);
      const texts = ((await res.json()) as Array<{ body: { text: string } }>).map((entry) => entry.body.text);
      return { texts, dropped: res.headers.get('x-sandbox-sent-dropped') };
    };
    try {
      for (let i = 1; i <= 5; i++) expect((await send(`m${i}`)).status).toBe(201);
      expect(await log()).toEqual({ texts: ['m1', 'm2', 'm3', 'm4', 'm5'], dropped: '0' });

      for (let i = 6; i <= 12; i++) expect((await send(`m${i}`)).status).toBe(201);
      expect(await log()).toEqual({ texts: ['m8', 'm9', 'm10', 'm11', 'm12'], dropped: '7' });

      sandbox.reset();
      expect(await log()).toEqual({ texts: [], dropped: '0' });
    } finally {
      await close(server);
    }
  });

  it('keeps as many issued message ids for status updates: an older one answers as never issued', async () => {
    const sandbox = createSandbox({ sentLogLimit: 3 });
    const { server, url } = await listen(sandbox);
    await createEvolutionInstance(url, INSTANCE, API_KEY);
    const send = async (text: string) => {
      const res = await fetch(`${url}/alt-a/message/sendText/${INSTANCE}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', apikey: API_KEY },
        body: JSON.stringify({ number: '5511111111111', text }),
      });
      return ((await res.json()) as { key: { id: string } }).key.id;
    };
    const status = (messageId: string) =>
      fetch(`${url}/_sandbox/status`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ channel: 'alt-a', account: INSTANCE, message_id: messageId, status: 'read' }),
      });
    try {
      const ids = [];
      for (let i = 1; i <= 4; i++) ids.push(await send(`m${i}`));
      const oldest = await status(ids[0]!);
      expect(oldest.status).toBe(404);
      expect(await oldest.json()).toEqual({
        error: `message ${ids[0]} was not issued by alt-a account ${INSTANCE}`,
      });
      // Still known: it gets as far as the webhook, which this account has none of.
      for (const kept of ids.slice(1)) expect((await status(kept)).status).toBe(409);
    } finally {
      await close(server);
    }
  });
});

describe('issued messages', () => {
  it('keeps the newest up to its limit, in the order they were issued', () => {
    const issued = new IssuedMessages<number>(2);
    issued.set('a', 1);
    issued.set('b', 2);
    issued.set('a', 3);
    issued.set('c', 4);
    expect([issued.get('a'), issued.get('b'), issued.get('c')]).toEqual([3, undefined, 4]);
    issued.clear();
    expect(issued.get('a')).toBeUndefined();
    expect(() => new IssuedMessages(0)).toThrow();
  });
});
