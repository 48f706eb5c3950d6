import { createHmac } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { beforeAll, describe, expect, it } from 'vitest';
import { postJson, type Receiver, sandboxAndReceiver } from './support.js';

type Json = Record<string, unknown>;
const PAGE = '104729185532201';
const IG = '17841400000000001';
const USER = '6543219870123456';
const SECRET = 'app-secret-1';

describe("social and photo: Meta's redelivery of webhooks not answered 200", () => {
  // Meta's hour of retries times a ten-thousandth.
  const env = sandboxAndReceiver({ redeliveryDelayScale: 0.0001 });
  const json = async (res: Response) => ({ status: res.status, body: (await res.json()) as Json });
  const control = async (path: string, body: unknown) =>
    json(await postJson(`${env.base}/_sandbox${path}`, body));
  const subscribe = () =>
    postJson(
      `${env.base}/social/v21.0/${PAGE}/subscribed_apps?subscribed_fields=messages`,
      {},
      {
        authorization: 'Bearer EAAG-page',
      },
    );
  const subscribedApps = async () =>
    json(
      await fetch(`${env.base}/social/v21.0/${PAGE}/subscribed_apps`, {
        headers: { authorization: 'Bearer EAAG-page' },
      }),
    );
  const connect = async () => {
    await subscribe();
    await control('/social/app', {
      account: PAGE,
      callback_url: `${env.receiver.url}/hook`,
      verify_token: 'verify-1',
      app_secret: SECRET,
    });
  };
  const inbound = () => control('/inbound', { channel: 'social', account: PAGE, from: USER, text: 'oi' });

  it('delivers again at once after any answer but a 200, a 204 included, until one is 200', async () => {
    await connect();
    env.receiver.answers.push(204, 500);
    expect((await inbound()).body).toMatchObject({ delivered_status: 204, redelivering: true });
    await env.sandbox.redelivered();
    const bodies = env.receiver.posts().map((call) => call.rawBody);
    expect(bodies).toHaveLength(3);
    expect(new Set(bodies).size).toBe(1);
    expect((await subscribedApps()).body.data).toHaveLength(1);
  });

  it('unsubscribes the app from the Page once a webhook has failed for an hour, and posts nothing more for it', async () => {
    await connect();
    env.receiver.answers.push(...Array<number>(30).fill(503));
    expect((await inbound()).body).toMatchObject({ delivered_status: 503, redelivering: true });
    await env.sandbox.redelivered();
    // The first, again at once, then after 1, 2, 4, 8 and 16 minutes, and a last one at the hour.
    expect(env.receiver.posts()).toHaveLength(8);
    expect((await subscribedApps()).body).toEqual({ data: [] });
    expect((await inbound()).status).toBe(409);
    // Meta keeps the messages it posted nowhere: the Conversations API lists them.
    const listed = await json(
      await fetch(
        `${env.base}/social/v21.0/${PAGE}/conversations?platform=messenger&fields=messages{message}`,
        { headers: { authorization: 'Bearer EAAG-page' } },
      ),
    );
    const messages = (listed.body.data as Array<{ messages: { data: Json[] } }>)[0]!.messages.data;
    expect(messages.slice(0, 2).map((message) => message.message)).toEqual(['oi', 'oi']);
    // Subscribed again, the Page's webhooks come again.
    env.receiver.answers.length = 0;
    await subscribe();
    expect((await inbound()).body).toMatchObject({ delivered_status: 200 });
  });
});

describe('social (Messenger) and photo (Instagram) emulation', () => {
  const env = sandboxAndReceiver();
  let base = '';
  let receiver: Receiver;
  beforeAll(() => {
    ({ base, receiver } = env);
  });

  const json = async (res: Response) => ({ status: res.status, body: (await res.json()) as Json });
  const control = async (path: string, body: unknown) =>
    json(await postJson(`${base}/_sandbox${path}`, body));
  const graph = async (channel: string, path: string, body: unknown, token = 'EAAG-page') =>
    json(await postJson(`${base}/${channel}/v21.0/${path}`, body, { authorization: `Bearer ${token}` }));
  const connect = async (channel: 'social' | 'photo', account: string) => {
    const fields = channel === 'social' ? 'messages,message_deliveries' : 'messages,messaging_seen';
    const token = channel === 'social' ? 'EAAG-page' : 'IGAA-token';
    expect(await graph(channel, `${account}/subscribed_apps?subscribed_fields=${fields}`, {}, token)).toEqual(
      {
        status: 200,
        body: { success: true },
      },
    );
    expect(
      await control(`/${channel}/app`, {
        account,
        callback_url: `${receiver.url}/hook`,
        verify_token: 'verify-1',
        app_secret: SECRET,
      }),
    ).toEqual({ status: 200, body: { ok: true } });
  };
  const inbound = (channel: string, account: string, text = 'Olá, ação') =>
    control('/inbound', { channel, account, from: USER, text });
  const sendText = (channel: string, account: string, body: Json = {}, token?: string) =>
    graph(
      channel,
      `${account}/messages`,
      {
        recipient: { id: USER },
        ...(channel === 'social' ? { messaging_type: 'RESPONSE' } : {}),
        message: { text: 'resposta' },
        ...body,
      },
      token,
    );
  const signatureOf = (raw: string) => `sha256=${createHmac('sha256', SECRET).update(raw).digest('hex')}`;

  it('sets the app callback only after the hub.challenge handshake', async () => {
    receiver.handshake = 'wrong-body';
    const refused = await control('/social/app', {
      account: PAGE,
      callback_url: `${receiver.url}/hook`,
      verify_token: 'verify-1',
      app_secret: SECRET,
    });
    expect(refused.status).toBe(400);
    expect(refused.body).toEqual({ error: expect.stringMatching(/^Callback verification failed/) });
    const [handshake] = receiver.calls;
    expect(handshake?.url).toMatch(/hub\.mode=subscribe&hub\.verify_token=verify-1&hub\.challenge=\d+/);
  });

  it('posts a signed Messenger message event, escaped as Meta escapes it', async () => {
    await connect('social', PAGE);
    const delivered = await inbound('social', PAGE);
    expect(delivered.body).toMatchObject({ ok: true, delivered_status: 200 });
    const [post] = receiver.posts();
    expect(post!.rawBody).toContain('Ol\\u00e1, a\\u00e7\\u00e3o');
    expect(post!.headers['x-hub-signature-256']).toBe(signatureOf(post!.rawBody));
    const body = JSON.parse(post!.rawBody) as Json;
    expect(body).toEqual({
      object: 'page',
      entry: [
        {
          id: PAGE,
          time: expect.any(Number),
          messaging: [
            {
              sender: { id: USER },
              recipient: { id: PAGE },
              timestamp: expect.any(Number),
              message: { mid: delivered.body.provider_message_id, text: 'Olá, ação' },
            },
          ],
        },
      ],
    });
    expect(delivered.body.provider_message_id).toMatch(/^m_[\w-]{40,}$/);
  });

  it('posts a tap on a postback button on messaging_postbacks, only to an account subscribed to it', async () => {
    await connect('social', PAGE);
    const tap = { channel: 'social', account: PAGE, from: USER, text: 'Começar', type: 'postback' };
    // Subscribed to messages and deliveries only: Meta sends the postback nowhere.
    expect((await control('/inbound', tap)).status).toBe(409);
    await graph('social', `${PAGE}/subscribed_apps?subscribed_fields=messages,messaging_postbacks`, {});
    const delivered = await control('/inbound', tap);
    expect(delivered.body).toMatchObject({ ok: true, delivered_status: 200 });
    const body = JSON.parse(receiver.posts()[0]!.rawBody) as { entry: Array<{ messaging: Json[] }> };
    expect(body.entry[0]!.messaging).toEqual([
      {
        sender: { id: USER },
        recipient: { id: PAGE },
        timestamp: expect.any(Number),
        postback: { mid: delivered.body.provider_message_id, title: 'Começar', payload: 'GET_STARTED' },
      },
    ]);
    expect((await control('/inbound', { ...tap, type: 'image' })).body).toEqual({
      error: 'social inbound type must be one of text, postback',
    });
  });

  it('answers the Send API with recipient_id and message_id, and records it', async () => {
    await connect('social', PAGE);
    await inbound('social', PAGE);
    const sent = await sendText('social', PAGE);
    expect(sent).toEqual({
      status: 200,
      body: { recipient_id: USER, message_id: expect.stringMatching(/^m_/) },
    });
    // `/me` is the token's Page.
    expect((await sendText('social', 'me')).status).toBe(200);
    const log = (await (await fetch(`${base}/_sandbox/sent?channel=social`)).json()) as Json[];
    expect(log[0]).toMatchObject({
      account: PAGE,
      to: USER,
      path: `/social/v21.0/${PAGE}/messages`,
      body: { recipient: { id: USER }, messaging_type: 'RESPONSE', message: { text: 'resposta' } },
      provider_message_id: sent.body.message_id,
    });
  });

  it('refuses what Meta refuses: another token, no messaging_type, a user who never wrote, too long a text', async () => {
    await connect('social', PAGE);
    expect(await sendText('social', PAGE, {}, 'another-token')).toMatchObject({
      status: 401,
      body: { error: { code: 190, type: 'OAuthException', fbtrace_id: expect.any(String) } },
    });
    expect(await sendText('social', PAGE)).toMatchObject({
      status: 400,
      body: { error: { code: 100, error_subcode: 2018001, message: '(#100) No matching user found' } },
    });
    await inbound('social', PAGE);
    expect((await sendText('social', PAGE, { messaging_type: undefined })).body).toMatchObject({
      error: { code: 100 },
    });
    expect((await sendText('social', PAGE, { message: { text: 'a'.repeat(2001) } })).body).toMatchObject({
      error: { code: 100, message: expect.stringContaining('2000') },
    });
  });

  it('refuses a send outside the 24-hour window with code 10, unless HUMAN_AGENT within 7 days', async () => {
    await connect('social', PAGE);
    await inbound('social', PAGE);
    await control('/windows', {
      channel: 'social',
      account: PAGE,
      number: USER,
      last_inbound_at: new Date(Date.now() - 25 * 3_600_000).toISOString(),
    });
    expect(await sendText('social', PAGE)).toMatchObject({
      status: 400,
      body: {
        error: {
          message: '(#10) This message is sent outside of allowed window.',
          code: 10,
          error_subcode: 2018278,
        },
      },
    });
    expect(
      (await sendText('social', PAGE, { messaging_type: 'MESSAGE_TAG', tag: 'HUMAN_AGENT' })).status,
    ).toBe(200);
  });

  it('answers an ended token with 190 and its subcode, and a rate limit with 613', async () => {
    await connect('social', PAGE);
    await inbound('social', PAGE);
    await control('/accounts', { channel: 'social', account: PAGE, state: 'disconnected' });
    expect((await sendText('social', PAGE)).body).toMatchObject({ error: { code: 190, error_subcode: 463 } });
    await control('/accounts', { channel: 'social', account: PAGE, state: 'connected' });
    await control('/faults', { channel: 'social', account: PAGE, mode: 'rate_limit' });
    expect((await sendText('social', PAGE)).body).toMatchObject({ error: { code: 613 } });
  });

  it('reports deliveries by mid and reads by watermark on Messenger', async () => {
    await connect('social', PAGE);
    await inbound('social', PAGE);
    const before = Date.now();
    const sent = await sendText('social', PAGE);
    const after = Date.now();
    const mid = sent.body.message_id;
    await control('/status', { channel: 'social', account: PAGE, message_id: mid, status: 'delivered' });
    const delivery = JSON.parse(receiver.posts().at(-1)!.rawBody) as { entry: Array<{ messaging: Json[] }> };
    expect(delivery.entry[0]!.messaging[0]).toMatchObject({
      sender: { id: USER },
      recipient: { id: PAGE },
      delivery: { mids: [mid], watermark: expect.any(Number) },
    });
    // The time the message was taken, not the event's.
    const { watermark } = (delivery.entry[0]!.messaging[0] as { delivery: { watermark: number } }).delivery;
    expect(watermark).toBeGreaterThanOrEqual(before);
    expect(watermark).toBeLessThanOrEqual(after);
    // Not subscribed to message_reads: Meta sends nothing.
    expect(
      (await control('/status', { channel: 'social', account: PAGE, message_id: mid, status: 'read' }))
        .status,
    ).toBe(409);
  });

  it('batches several entries in one signed POST: a message, an echo, a standby event, a reaction', async () => {
    await connect('social', PAGE);
    const batch = await control('/social/batch', {
      account: PAGE,
      events: [
        { kind: 'message', from: USER, text: 'um' },
        { kind: 'echo', from: USER, text: 'nosso' },
        { kind: 'standby', from: USER, text: 'de outro app' },
        { kind: 'reaction', from: USER },
      ],
    });
    expect(batch.body).toMatchObject({ ok: true, delivered_status: 200 });
    const post = receiver.posts().at(-1)!;
    expect(post.headers['x-hub-signature-256']).toBe(signatureOf(post.rawBody));
    const body = JSON.parse(post.rawBody) as { entry: Json[] };
    expect(body.entry).toHaveLength(4);
    expect(body.entry[1]).toMatchObject({
      messaging: [{ sender: { id: PAGE }, message: { is_echo: true } }],
    });
    expect(body.entry[2]).toMatchObject({ standby: [{ sender: { id: USER } }] });
    expect(body.entry[3]).toMatchObject({ messaging: [{ reaction: { action: 'react' } }] });
  });

  it('speaks Instagram: object "instagram", its mids, 1000 bytes, its window subcode, reads by mid', async () => {
    await connect('photo', IG);
    const delivered = await inbound('photo', IG);
    const body = JSON.parse(receiver.posts()[0]!.rawBody) as Json;
    expect(body).toMatchObject({ object: 'instagram', entry: [{ id: IG }] });
    expect(Buffer.from(String(delivered.body.provider_message_id), 'base64').toString()).toMatch(
      /^ig_message_item:1:IGMessageThread:/,
    );
    const sent = await sendText('photo', IG, {}, 'IGAA-token');
    expect(sent).toMatchObject({ status: 200, body: { recipient_id: USER } });
    expect((await sendText('photo', IG, { message: { text: 'é'.repeat(501) } }, 'IGAA-token')).status).toBe(
      400,
    );
    await control('/status', {
      channel: 'photo',
      account: IG,
      message_id: sent.body.message_id,
      status: 'read',
    });
    expect(JSON.parse(receiver.posts().at(-1)!.rawBody)).toMatchObject({
      entry: [{ messaging: [{ read: { mid: sent.body.message_id } }] }],
    });
    expect(
      (
        await control('/status', {
          channel: 'photo',
          account: IG,
          message_id: sent.body.message_id,
          status: 'delivered',
        })
      ).status,
    ).toBe(400);
    await control('/windows', {
      channel: 'photo',
      account: IG,
      number: USER,
      last_inbound_at: new Date(Date.now() - 25 * 3_600_000).toISOString(),
    });
    expect((await sendText('photo', IG, {}, 'IGAA-token')).body).toMatchObject({
      error: { code: 10, error_subcode: 2534022 },
    });
  });

  it("reads an Instagram account's node by either of its ids: user_id as its webhooks name it, the app-scoped id as /me does", async () => {
    const account = '17841400000000077';
    const read = async (channel: string, node: string, fields: string, token = 'IGAA-node') =>
      json(
        await fetch(`${base}/${channel}/v21.0/${node}?fields=${fields}`, {
          headers: { authorization: `Bearer ${token}` },
        }),
      );
    const byUserId = await read('photo', account, 'user_id,username');
    expect(byUserId).toEqual({
      status: 200,
      body: { id: expect.stringMatching(/^2\d{16}$/), user_id: account, username: expect.any(String) },
    });
    const appScoped = String(byUserId.body.id);
    expect(await read('photo', appScoped, 'user_id')).toEqual({
      status: 200,
      body: { id: appScoped, user_id: account },
    });
    expect(await read('photo', 'me', 'user_id')).toEqual({
      status: 200,
      body: { id: appScoped, user_id: account },
    });
    // The app-scoped id names the same node on its edges too: subscribing under it subscribes the account.
    expect(
      await graph('photo', `${appScoped}/subscribed_apps?subscribed_fields=messages`, {}, 'IGAA-node'),
    ).toEqual({
      status: 200,
      body: { success: true },
    });
    expect((await read('photo', account, 'user_id', 'IGAA-other')).body).toMatchObject({
      error: { code: 190 },
    });
    // What the object behind the node inherits is no field of it.
    expect((await read('photo', account, 'constructor')).body).toMatchObject({
      error: {
        code: 100,
        message: '(#100) Tried accessing nonexisting field (constructor) on node type (User)',
      },
    });
    // A Page has one id, and no user_id.
    expect(await read('social', '104729185532277', 'user_id', 'EAAG-node')).toMatchObject({
      status: 400,
      body: {
        error: {
          code: 100,
          message: '(#100) Tried accessing nonexisting field (user_id) on node type (Page)',
        },
      },
    });
    expect(await read('social', '104729185532277', 'name', 'EAAG-node')).toEqual({
      status: 200,
      body: { id: '104729185532277', name: expect.any(String) },
    });
  });

  it("lists an account's conversations, newest first, with their messages by field expansion, as the Conversations API does", async () => {
    const page = '104729185532299';
    await connect('social', page);
    const users = ['6543219870000001', '6543219870000002', '6543219870000003'];
    for (const user of users) {
      expect(
        (
          await control('/inbound', {
            channel: 'social',
            account: page,
            from: user,
            text: `oi ${user.slice(-1)}`,
            name: 'Ana Souza',
          })
        ).status,
      ).toBe(200);
    }
    const reply = await graph('social', `${page}/messages`, {
      recipient: { id: users[0] },
      messaging_type: 'RESPONSE',
      message: { text: 'resposta' },
    });
    // Meta's two calls a second per Page: each call a little over half a second after the last.
    const list = async (query: string, token = 'EAAG-page') => {
      await sleep(520);
      return json(
        await fetch(`${base}/social/v21.0/${page}/conversations?${query}`, {
          headers: { authorization: `Bearer ${token}` },
        }),
      );
    };

    // Without fields: each conversation's id and when its last message came, as Graph writes times.
    const plain = await list('platform=messenger');
    expect(plain.status).toBe(200);
    const threads = plain.body.data as Json[];
    expect(threads).toHaveLength(3);
    expect(threads[0]).toEqual({
      id: expect.any(String),
      updated_time: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+0000$/),
    });

    // The conversation answered last comes first; its messages newest first, each as asked.
    const expanded = await list(
      'platform=messenger&fields=id,updated_time,messages.limit(5){id,created_time,from,to,message}',
    );
    const [first] = expanded.body.data as Array<{ messages: { data: Json[] } }>;
    expect(first!.messages.data).toEqual([
      {
        id: reply.body.message_id,
        created_time: expect.any(String),
        from: { name: expect.any(String), email: `${page}@facebook.com`, id: page },
        to: { data: [{ name: expect.any(String), email: `${users[0]}@facebook.com`, id: users[0] }] },
        message: 'resposta',
      },
      {
        id: expect.stringMatching(/^m_/),
        created_time: expect.any(String),
        from: { name: 'Ana Souza', email: `${users[0]}@facebook.com`, id: users[0] },
        to: { data: [{ name: expect.any(String), email: `${page}@facebook.com`, id: page }] },
        message: 'oi 1',
      },
    ]);

    // Paged by cursors: `after` and a `next` while there are more.
    const firstPage = await list('platform=messenger&limit=2');
    expect(firstPage.body.data).toHaveLength(2);
    const paging = firstPage.body.paging as { cursors: { after: string }; next?: string };
    expect(paging.next).toContain(`after=${paging.cursors.after}`);
    const secondPage = await list(`platform=messenger&limit=2&after=${paging.cursors.after}`);
    expect(secondPage.body.data).toEqual([threads[2]]);
    expect((secondPage.body.paging as Json).next).toBeUndefined();

    // Instagram's conversations of the Page are another list; a field a conversation has not is refused.
    expect((await list('platform=instagram')).body).toEqual({ data: [] });
    expect(await list('fields=id,participantes')).toMatchObject({
      status: 400,
      body: {
        error: {
          code: 100,
          message: '(#100) Tried accessing nonexisting field (participantes) on node type (UnifiedThread)',
        },
      },
    });
    expect((await list('platform=messenger', 'EAAG-other')).status).toBe(401);
  });

  it("lists an Instagram account's conversations with usernames, on platform instagram", async () => {
    const account = '17841400000000077';
    await connect('photo', account);
    expect(
      (await control('/inbound', { channel: 'photo', account, from: USER, text: 'oi', name: 'Ana' })).status,
    ).toBe(200);
    const listed = await json(
      await fetch(
        `${base}/photo/v21.0/${account}/conversations?platform=instagram&fields=messages{from,message}`,
        {
          headers: { authorization: 'Bearer IGAA-token' },
        },
      ),
    );
    expect(listed.body.data).toEqual([
      {
        id: expect.any(String),
        messages: { data: [{ from: { username: 'ana', id: USER }, message: 'oi' }] },
      },
    ]);
  });

  it("refuses a third call to an account's conversations within a second with the product's rate-limit error, as Meta allows two a second", async () => {
    const page = '104729185532297';
    const account = '17841400000000078';
    await connect('social', page);
    await connect('photo', account);
    const list = async (channel: 'social' | 'photo', node: string, token: string) =>
      json(
        await fetch(`${base}/${channel}/v21.0/${node}/conversations?fields=id`, {
          headers: { authorization: `Bearer ${token}` },
        }),
      );
    expect((await list('social', page, 'EAAG-page')).status).toBe(200);
    expect((await list('social', page, 'EAAG-page')).status).toBe(200);
    expect(await list('social', page, 'EAAG-page')).toMatchObject({
      status: 400,
      body: {
        error: {
          code: 613,
          message: '(#613) Calls to this api have exceeded the rate limit.',
          type: 'OAuthException',
        },
      },
    });
    // Each account has its own two; Instagram answers its own rate-limit error.
    expect((await list('photo', account, 'IGAA-token')).status).toBe(200);
    expect((await list('photo', account, 'IGAA-token')).status).toBe(200);
    expect(await list('photo', account, 'IGAA-token')).toMatchObject({
      status: 400,
      body: { error: { code: 4, message: '(#4) Application request limit reached' } },
    });
    // The refused call did not count: a second after the first two, the Page is answered again.
    await sleep(1_000);
    expect((await list('social', page, 'EAAG-page')).status).toBe(200);
  });

  it('gives the details of the 20 most recent messages of a conversation only', async () => {
    const page = '104729185532298';
    await connect('social', page);
    for (let i = 1; i <= 22; i++)
      await control('/inbound', { channel: 'social', account: page, from: USER, text: `m${i}` });
    const listed = await json(
      await fetch(`${base}/social/v21.0/${page}/conversations?fields=messages.limit(50){message}`, {
        headers: { authorization: 'Bearer EAAG-page' },
      }),
    );
    const texts = (listed.body.data as Array<{ messages: { data: Json[] } }>)[0]!.messages.data.map(
      (m) => m.message,
    );
    expect(texts).toHaveLength(20);
    expect(texts[0]).toBe('m22');
    expect(texts.at(-1)).toBe('m3');
  });

  it('delivers nowhere until the account is subscribed to the app', async () => {
    await control('/social/app', {
      account: PAGE,
      callback_url: `${receiver.url}/hook`,
      verify_token: 'verify-1',
      app_secret: SECRET,
    });
    expect((await inbound('social', PAGE)).status).toBe(409);
  });
});
