import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { postJson, type Receiver, sandboxAndReceiver } from './support.js';

type Json = Record<string, unknown>;
const APP = { client_id: '2069392825111111', client_secret: 'app-secret' };
const SELLER = '123456789';
const BUYER = '441782523';

describe('market (Mercado Livre) emulation', () => {
  const env = sandboxAndReceiver();
  const { sandbox } = env;
  let base = '';
  let receiver: Receiver;
  beforeAll(() => {
    ({ base, receiver } = env);
  });

  const control = async (path: string, body: unknown) => {
    const res = await postJson(`${base}/_sandbox${path}`, body);
    return { status: res.status, body: (await res.json()) as Json };
  };
  const api = async (method: 'GET' | 'POST', path: string, token: string, body?: unknown) => {
    const res = await fetch(`${base}/market${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: res.status, body: (await res.json()) as Json };
  };
  const refresh = async (refreshToken: string) => {
    const res = await fetch(`${base}/market/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: new URLSearchParams({ grant_type: 'refresh_token', ...APP, refresh_token: refreshToken }),
    });
    return { status: res.status, body: (await res.json()) as Json };
  };
  async function consent(notificationUrl = `${receiver.url}/notifications`) {
    await control('/market/applications', { ...APP, notification_url: notificationUrl });
    return (await control('/market/authorizations', { client_id: APP.client_id, seller_id: SELLER })).body;
  }
  const inbound = (body: Json = {}) =>
    control('/inbound', {
      channel: 'market',
      account: SELLER,
      from: BUYER,
      name: 'COMPRADOR',
      text: 'oi',
      ...body,
    });

  it("grants ML's token shapes, rotates the refresh token and refuses a spent one with invalid_grant", async () => {
    const granted = await consent();
    expect(granted).toMatchObject({
      access_token: expect.stringMatching(
        new RegExp(`^APP_USR-${APP.client_id}-\\d{6}-[0-9a-f]{32}-${SELLER}$`),
      ),
      token_type: 'Bearer',
      expires_in: 21600,
      user_id: Number(SELLER),
      refresh_token: expect.stringMatching(new RegExp(`^TG-[0-9a-f]{24}-${SELLER}$`)),
    });
    const renewed = await refresh(String(granted.refresh_token));
    expect(renewed.status).toBe(200);
    expect(renewed.body.refresh_token).not.toBe(granted.refresh_token);
    const reused = await refresh(String(granted.refresh_token));
    expect(reused).toEqual({
      status: 400,
      body: {
        message: expect.stringContaining('already used'),
        error: 'invalid_grant',
        status: 400,
        cause: [],
      },
    });
  });

  it('answers an unknown or expired token with 401 in its error shape', async () => {
    const granted = await consent();
    expect((await api('GET', '/users/me', String(granted.access_token))).body).toMatchObject({
      id: Number(SELLER),
    });
    await control('/market/expire-tokens', { seller_id: SELLER });
    expect(await api('GET', '/users/me', String(granted.access_token))).toEqual({
      status: 401,
      body: { message: 'invalid access token', error: 'invalid_token', status: 401, cause: [] },
    });
  });

  it('notifies a question as ML does, and takes one answer for it', async () => {
    const granted = await consent();
    const asked = await inbound({ repeat: 2 });
    expect(asked.body).toMatchObject({ ok: true, delivered_statuses: [200, 200] });
    const [first, again] = receiver.posts().map((call) => JSON.parse(call.rawBody) as Json);
    expect(first).toEqual({
      _id: expect.stringMatching(/^[0-9a-f]{24}$/),
      resource: `/questions/${asked.body.provider_message_id}`,
      user_id: Number(SELLER),
      topic: 'questions',
      application_id: Number(APP.client_id),
      attempts: 1,
      sent: expect.any(String),
      received: expect.any(String),
    });
    // A redelivery is the same notification, `_id` included.
    expect(again).toEqual(first);
    const token = String(granted.access_token);
    const question = await api('GET', `/questions/${asked.body.provider_message_id}`, token);
    expect(question.body).toMatchObject({ status: 'UNANSWERED', text: 'oi', from: { id: Number(BUYER) } });
    const id = Number(asked.body.provider_message_id);
    expect((await api('POST', '/answers', token, { question_id: id, text: 'Olá!' })).body).toMatchObject({
      status: 'ANSWERED',
      answer: { text: 'Olá!', status: 'ACTIVE' },
    });
    expect((await api('POST', '/answers', token, { question_id: id, text: 'de novo' })).status).toBe(400);
    // "notified of all questions asked or answered".
    await sandbox.idle();
    expect(
      receiver
        .posts()
        .map((call) => (JSON.parse(call.rawBody) as Json).resource)
        .at(-1),
    ).toBe(`/questions/${id}`);
  });

  it('notifies a post-sale message by its id and replies in its pack with tag=post_sale only', async () => {
    const granted = await consent();
    const written = await inbound({ topic: 'messages' });
    const notified = JSON.parse(receiver.posts()[0]!.rawBody) as Json;
    expect(notified).toMatchObject({
      resource: written.body.provider_message_id,
      topic: 'messages',
      user_id: SELLER,
    });
    const token = String(granted.access_token);
    expect((await api('GET', `/messages/${notified.resource}`, token)).status).toBe(400);
    const read = await api('GET', `/messages/${notified.resource}?tag=post_sale`, token);
    const [message] = read.body.messages as Json[];
    expect(message).toMatchObject({ from: { user_id: BUYER }, to: { user_id: SELLER }, text: 'oi' });
    const pack = (message!.message_resources as Json[]).find((resource) => resource.name === 'packs')!.id;
    const reply = await api('POST', `/messages/packs/${pack}/sellers/${SELLER}?tag=post_sale`, token, {
      from: { user_id: SELLER },
      to: { user_id: BUYER },
      text: 'x'.repeat(351),
    });
    expect(reply.body).toMatchObject({ error: 'bad_request', status: 400 });
  });

  it("answers a rate_limit fault with ML's 429", async () => {
    const granted = await consent();
    await control('/faults', { channel: 'market', account: SELLER, mode: 'rate_limit' });
    expect(await api('GET', '/users/me', String(granted.access_token))).toEqual({
      status: 429,
      body: { message: 'Too Many Requests', error: 'local_rate_limited', status: 429, cause: [] },
    });
  });
});

describe("market: Mercado Livre's retries of a notification not answered 200, and its missed_feeds", () => {
  // ML's hour of retries times a ten-thousandth: a third of a second.
  const env = sandboxAndReceiver({ redeliveryDelayScale: 0.0001 });
  const { sandbox } = env;
  let base = '';
  let receiver: Receiver;
  let token = '';
  beforeEach(async () => {
    ({ base, receiver } = env);
    await postJson(`${base}/_sandbox/market/applications`, {
      ...APP,
      notification_url: `${receiver.url}/notifications`,
    });
    const granted = (await (
      await postJson(`${base}/_sandbox/market/authorizations`, {
        client_id: APP.client_id,
        seller_id: SELLER,
      })
    ).json()) as Json;
    token = String(granted.access_token);
  });
  const inbound = async () =>
    (await (
      await postJson(`${base}/_sandbox/inbound`, {
        channel: 'market',
        account: SELLER,
        from: BUYER,
        text: 'oi',
      })
    ).json()) as Json;
  const missedFeeds = async (query: string, bearer = token) => {
    const res = await fetch(`${base}/market/missed_feeds?${query}`, {
      headers: { authorization: `Bearer ${bearer}` },
    });
    return { status: res.status, body: (await res.json()) as Json };
  };
  const posted = () => receiver.posts().map((call) => JSON.parse(call.rawBody) as Json);

  it('tries eight times in all, a 2xx other than 200 included, each try with its number, then lists it as lost', async () => {
    receiver.answers.push(204, 500, 503, 500, 500, 500, 500, {
      status: 500,
      headers: { 'x-motivo': 'fora' },
    });
    expect(await inbound()).toMatchObject({ delivered_status: 204, redelivering: true });
    await sandbox.redelivered();
    const tries = posted();
    expect(tries.map((body) => body.attempts)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(new Set(tries.map((body) => body._id)).size).toBe(1);
    expect(tries.at(-1)!.sent).not.toBe(tries[0]!.sent);

    const { status, body } = await missedFeeds(`app_id=${APP.client_id}`);
    expect(status).toBe(200);
    expect(Object.keys(body)).toEqual(['messages']);
    const [lost] = body.messages as Json[];
    expect(lost).toMatchObject({
      _id: tries[0]!._id,
      resource: tries[0]!.resource,
      user_id: Number(SELLER),
      topic: 'questions',
      application_id: Number(APP.client_id),
      attempts: 8,
      received: tries[0]!.received,
      request: { url: `${receiver.url}/notifications`, headers: { 'content-type': 'application/json' } },
      response: {
        http_code: 500,
        body: '[object Object]',
        headers: expect.objectContaining({ 'x-motivo': 'fora' }),
      },
    });
    // The notification as first posted, without its _id.
    const data = JSON.parse(String((lost!.request as Json).data)) as Json;
    expect(data).toMatchObject({ resource: tries[0]!.resource, attempts: 1 });
    expect(data).not.toHaveProperty('_id');

    expect((await missedFeeds(`app_id=${APP.client_id}&topic=messages`)).body).toEqual({ messages: [] });
    expect((await missedFeeds(`app_id=${APP.client_id}&offset=1`)).body).toEqual({ messages: [] });
    expect((await missedFeeds(`app_id=${APP.client_id}&topic=questions&limit=1`)).body.messages).toHaveLength(
      1,
    );
  });

  it('stops at the first 200, and lists nothing as lost', async () => {
    receiver.answers.push(500);
    expect(await inbound()).toMatchObject({ delivered_status: 500, redelivering: true });
    await sandbox.redelivered();
    expect(posted().map((body) => body.attempts)).toEqual([1, 2]);
    expect((await missedFeeds(`app_id=${APP.client_id}`)).body).toEqual({ messages: [] });
  });

  it("refuses another application's missed feeds, and a call without app_id", async () => {
    expect((await missedFeeds('app_id=5503910054141466')).status).toBe(403);
    expect((await missedFeeds('topic=questions')).body).toMatchObject({ status: 400, error: 'bad_request' });
    expect((await missedFeeds(`app_id=${APP.client_id}`, 'APP_USR-desconhecido')).status).toBe(401);
  });
});
