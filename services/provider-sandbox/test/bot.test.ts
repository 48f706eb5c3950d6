import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { telegramRedelivery } from '../src/bot.js';
import { createSandbox } from '../src/index.js';
import type { WebhookAnswer } from '../src/webhook-transport.js';
import { close, listen, postJson, type Receiver, sandboxAndReceiver } from './support.js';

const BOT_ID = '123456789';
const TOKEN = `${BOT_ID}:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw`;
const SECRET = 'S3cr3t_t0ken-x';
const USER = '987654321';
/** Another bot: the webhook calls a test makes after its bot's first go to it, a bot's being taken once a second. */
const OTHER_TOKEN = '555000777:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw';

describe('bot (Telegram Bot API) emulation', () => {
  // Real Telegram calls only https webhooks; the receiver here is plain http.
  const env = sandboxAndReceiver();
  let base = '';
  let receiver: Receiver;
  beforeAll(() => {
    ({ base, receiver } = env);
  });

  const call = async (method: string, body: unknown = {}, token = TOKEN) => {
    const res = await postJson(`${base}/bot/bot${token}/${method}`, body);
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  const control = (path: string, body: unknown) => postJson(`${base}/_sandbox${path}`, body);
  const setWebhook = () =>
    call('setWebhook', { url: `${receiver.url}/hook`, secret_token: SECRET, allowed_updates: ['message'] });
  const inbound = async (body: Record<string, unknown> = {}) => {
    const res = await control('/inbound', {
      channel: 'bot',
      account: BOT_ID,
      from: USER,
      name: 'Maria Souza',
      text: 'oi',
      ...body,
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };

  it('answers getMe with the bot as a User', async () => {
    const me = await call('getMe');
    expect(me).toEqual({
      status: 200,
      body: {
        ok: true,
        result: expect.objectContaining({
          id: Number(BOT_ID),
          is_bot: true,
          first_name: expect.any(String),
          username: expect.stringMatching(/bot$/),
        }),
      },
    });
  });

  it('answers 401 Unauthorized to another token of the same bot, and judges a token of no bot shape first', async () => {
    await call('getMe');
    expect(await call('getMe', {}, `${BOT_ID}:another-secret`)).toEqual({
      status: 401,
      body: { ok: false, error_code: 401, description: 'Unauthorized' },
    });
    // As telegram-bot-api's ClientManager::send: no colon, a leading 0, over 80 characters or an id of
    // 2^54 or more is an invalid token; an id that is no number is misdirected.
    const invalid = {
      status: 401,
      body: { ok: false, error_code: 401, description: 'Unauthorized: invalid token specified' },
    };
    for (const token of ['not-a-token', `0${TOKEN}`, `${BOT_ID}:${'a'.repeat(80)}`, '18014398509481984:AAH'])
      expect(await call('getMe', {}, token)).toEqual(invalid);
    expect(await call('getMe', {}, 'abc:AAH')).toEqual({
      status: 421,
      body: { ok: false, error_code: 421, description: 'Misdirected Request: unallowed token specified' },
    });
    expect(await call('noSuchMethod')).toEqual({
      status: 404,
      body: { ok: false, error_code: 404, description: 'Not Found: method not found' },
    });
    const notBot = await fetch(`${base}/bot/user${TOKEN}/getMe`);
    expect([notBot.status, await notBot.json()]).toEqual([
      404,
      { ok: false, error_code: 404, description: 'Not Found' },
    ]);
  });

  it('sets, reads and deletes the webhook with its secret token and allowed updates', async () => {
    expect(await setWebhook()).toEqual({
      status: 200,
      body: { ok: true, result: true, description: 'Webhook was set' },
    });
    const info = await call('getWebhookInfo');
    expect(info.body.result).toMatchObject({
      url: `${receiver.url}/hook`,
      pending_update_count: 0,
      allowed_updates: ['message'],
    });
    expect(
      await call('setWebhook', { url: `${receiver.url}/hook`, secret_token: 'bad token!' }, OTHER_TOKEN),
    ).toEqual({
      status: 400,
      body: {
        ok: false,
        error_code: 400,
        description: 'Bad Request: secret token contains unallowed characters',
      },
    });
    expect((await call('deleteWebhook')).body).toEqual({
      ok: true,
      result: true,
      description: 'Webhook was deleted',
    });
    expect((await call('getWebhookInfo')).body.result).toMatchObject({ url: '' });
  });

  it('closes the webhook before it judges a new one: a refused setWebhook leaves the bot with none', async () => {
    expect((await setWebhook()).body).toMatchObject({ ok: true, description: 'Webhook was set' });
    await new Promise((resolve) => setTimeout(resolve, 1_050));
    expect(await call('setWebhook', { url: `${receiver.url}/other`, secret_token: 'x'.repeat(257) })).toEqual(
      {
        status: 400,
        body: { ok: false, error_code: 400, description: 'Bad Request: secret token is too long' },
      },
    );
    expect((await call('getWebhookInfo')).body.result).toMatchObject({ url: '' });
    // What the bot's users write now reaches no one (held by Telegram, not posted).
    expect((await inbound()).status).toBe(409);
    expect((await call('deleteWebhook')).body).toMatchObject({ description: 'Webhook is already deleted' });
    expect((await call('setWebhook', { url: '' })).body).toMatchObject({
      description: 'Webhook is already deleted',
    });
    await new Promise((resolve) => setTimeout(resolve, 1_050));
    expect((await call('setWebhook', { url: 'https://' })).body).toEqual({
      ok: false,
      error_code: 400,
      description: 'Bad Request: invalid webhook URL specified',
    });
  });

  it("takes a bot's webhook URL once a second, before anything else about the call, and its removal any time", async () => {
    expect((await setWebhook()).body).toMatchObject({ ok: true, description: 'Webhook was set' });
    const throttled = {
      status: 429,
      body: {
        ok: false,
        error_code: 429,
        description: 'Too Many Requests: retry after 1',
        parameters: { retry_after: 1 },
      },
    };
    expect(await setWebhook()).toEqual(throttled);
    // Even a call the server would refuse for its secret is throttled first.
    expect(await call('setWebhook', { url: `${receiver.url}/hook`, secret_token: 'bad token!' })).toEqual(
      throttled,
    );
    // Another bot is not.
    expect((await call('setWebhook', { url: `${receiver.url}/hook` }, OTHER_TOKEN)).status).toBe(200);
    expect((await call('deleteWebhook')).body).toMatchObject({
      ok: true,
      description: 'Webhook was deleted',
    });
    await new Promise((resolve) => setTimeout(resolve, 1_050));
    expect((await setWebhook()).body).toMatchObject({ ok: true, description: 'Webhook was set' });
    await new Promise((resolve) => setTimeout(resolve, 1_050));
    expect((await setWebhook()).body).toMatchObject({ ok: true, description: 'Webhook is already set' });
    await new Promise((resolve) => setTimeout(resolve, 1_050));
    // Another secret is another webhook.
    expect(
      (await call('setWebhook', { url: `${receiver.url}/hook`, secret_token: 'Another_secret' })).body,
    ).toMatchObject({ ok: true, description: 'Webhook was set' });
  });

  it('refuses an http webhook as Telegram does unless http callbacks are allowed', async () => {
    const strict = createSandbox();
    const { server, url } = await listen(strict);
    try {
      const res = await postJson(`${url}/bot/bot${TOKEN}/setWebhook`, { url: 'http://example.test/hook' });
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({
        ok: false,
        error_code: 400,
        description: 'Bad Request: bad webhook: An HTTPS URL must be provided for webhook',
      });
    } finally {
      await close(server);
    }
  });

  it('refuses a webhook on a port Telegram does not call unless http callbacks are allowed', async () => {
    const strict = createSandbox();
    const { server, url } = await listen(strict);
    try {
      const refused = await postJson(`${url}/bot/bot${TOKEN}/setWebhook`, {
        url: 'https://example.test:8080/hook',
      });
      expect(refused.status).toBe(400);
      expect(await refused.json()).toEqual({
        ok: false,
        error_code: 400,
        description: 'Bad Request: bad webhook: Webhook can be set up only on ports 80, 88, 443 or 8443',
      });
      const taken = await postJson(`${url}/bot/bot${OTHER_TOKEN}/setWebhook`, {
        url: 'https://example.test:8443/hook',
      });
      expect(await taken.json()).toMatchObject({ ok: true, result: true });
    } finally {
      await close(server);
    }
  });

  it('delivers an Update with the secret token header, and the same bytes again on repeat', async () => {
    await setWebhook();
    const delivered = await inbound({ repeat: 2 });
    expect(delivered.body).toMatchObject({
      ok: true,
      delivered_statuses: [200, 200],
      provider_message_id: `${USER}:1`,
    });
    const posts = receiver.posts();
    expect(posts).toHaveLength(2);
    expect(posts[0]!.headers['x-telegram-bot-api-secret-token']).toBe(SECRET);
    expect(posts[1]!.rawBody).toBe(posts[0]!.rawBody);
    const update = JSON.parse(posts[0]!.rawBody);
    expect(update).toEqual({
      update_id: expect.any(Number),
      message: {
        message_id: 1,
        from: { id: Number(USER), is_bot: false, first_name: 'Maria', last_name: 'Souza' },
        chat: { id: Number(USER), first_name: 'Maria', last_name: 'Souza', type: 'private' },
        date: expect.any(Number),
        text: 'oi',
      },
    });
  });

  it('delivers a venue with its location on the message too, and a bare pin as a location only', async () => {
    await setWebhook();
    await inbound({ type: 'location', text: 'Loja Paulista' });
    await inbound({ type: 'pin', text: '-' });
    const [venue, pin] = receiver.posts().map((post) => JSON.parse(post.rawBody).message);
    const location = { latitude: -23.5613, longitude: -46.6565 };
    expect(venue).toMatchObject({
      location,
      venue: { location, title: 'Loja Paulista', address: 'Av. Paulista, 1578' },
    });
    expect(venue.text).toBeUndefined();
    expect(pin).toMatchObject({ location });
    expect(pin.venue).toBeUndefined();
    expect((await inbound({ type: 'image' })).body).toMatchObject({
      error: 'bot inbound type must be one of text, location, pin',
    });
  });

  it('answers 409 to inbound for a bot without a webhook', async () => {
    expect((await inbound()).status).toBe(409);
  });

  it('sends to a user who wrote first, answering the Message; refuses unknown chats and long texts', async () => {
    expect(await call('sendMessage', { chat_id: Number(USER), text: 'olá' })).toEqual({
      status: 400,
      body: { ok: false, error_code: 400, description: 'Bad Request: chat not found' },
    });
    await setWebhook();
    await inbound();
    const sent = await call('sendMessage', { chat_id: Number(USER), text: 'olá' });
    expect(sent).toEqual({
      status: 200,
      body: {
        ok: true,
        result: {
          message_id: 2,
          from: expect.objectContaining({ id: Number(BOT_ID), is_bot: true }),
          chat: { id: Number(USER), first_name: 'Maria', last_name: 'Souza', type: 'private' },
          date: expect.any(Number),
          text: 'olá',
        },
      },
    });
    expect((await call('sendMessage', { chat_id: Number(USER), text: 'x'.repeat(4097) })).body).toEqual({
      ok: false,
      error_code: 400,
      description: 'Bad Request: message is too long',
    });
    const log = (await (await fetch(`${base}/_sandbox/sent?channel=bot`)).json()) as Array<
      Record<string, unknown>
    >;
    expect(log).toEqual([
      expect.objectContaining({
        channel: 'bot',
        account: BOT_ID,
        to: USER,
        path: `/bot/bot${TOKEN}/sendMessage`,
        body: { chat_id: Number(USER), text: 'olá' },
        provider_message_id: `${USER}:2`,
      }),
    ]);
  });

  it('counts the text limit in characters, an emoji once, as the Bot API server does', async () => {
    await setWebhook();
    await inbound();
    // 4096 characters, 4196 UTF-16 code units.
    const longest = `${'😀'.repeat(100)}${'a'.repeat(3996)}`;
    expect(await call('sendMessage', { chat_id: Number(USER), text: longest })).toMatchObject({
      status: 200,
      body: { ok: true, result: { text: longest } },
    });
    expect((await call('sendMessage', { chat_id: Number(USER), text: `${longest}😀` })).body).toEqual({
      ok: false,
      error_code: 400,
      description: 'Bad Request: message is too long',
    });
  });

  it('measures and keeps the text as Telegram cleans it: trimmed, CR dropped, checked before the chat', async () => {
    await setWebhook();
    await inbound();
    // Spaces and newlines around the text are not kept, nor counted: 4096 characters and a newline pass.
    const longest = 'a'.repeat(4096);
    expect(await call('sendMessage', { chat_id: Number(USER), text: `\n  ${longest}\n` })).toMatchObject({
      status: 200,
      body: { ok: true, result: { text: longest } },
    });
    expect(await call('sendMessage', { chat_id: Number(USER), text: 'um\r\ndois\tfim  ' })).toMatchObject({
      body: { ok: true, result: { text: 'um\ndois fim' } },
    });
    for (const [text, description] of [
      ['', 'Bad Request: message text is empty'],
      [' \n ', 'Bad Request: text must be non-empty'],
      ['\r', 'Bad Request: text must be non-empty'],
    ])
      expect((await call('sendMessage', { chat_id: 1, text })).body).toEqual({
        ok: false,
        error_code: 400,
        description,
      });
    // The text is judged first: a long text to no chat is too long, not a chat not found.
    expect((await call('sendMessage', { text: 'x'.repeat(4097) })).body).toMatchObject({
      description: 'Bad Request: message is too long',
    });
  });

  it('refuses sends to a user who blocked the bot with 403, until the user writes to it again', async () => {
    await setWebhook();
    await inbound();
    expect((await control('/bot/blocks', { account: BOT_ID, user: USER })).status).toBe(200);
    expect(await call('sendMessage', { chat_id: Number(USER), text: 'olá' })).toEqual({
      status: 403,
      body: { ok: false, error_code: 403, description: 'Forbidden: bot was blocked by the user' },
    });
    // Another user's chat is not affected.
    await inbound({ from: '111222333', name: 'Ana' });
    expect((await call('sendMessage', { chat_id: 111222333, text: 'olá' })).status).toBe(200);
    await inbound({ text: 'voltei' });
    expect((await call('sendMessage', { chat_id: Number(USER), text: 'olá' })).status).toBe(200);
    const refused = await control('/bot/blocks', { account: 'bot', user: USER });
    expect(refused.status).toBe(400);
  });

  it('answers faults in Telegram error shapes: 403 blocked, 429 with retry_after', async () => {
    await setWebhook();
    await inbound();
    await control('/faults', { channel: 'bot', account: BOT_ID, mode: 'error', status: 403 });
    expect(await call('sendMessage', { chat_id: Number(USER), text: 'olá' })).toEqual({
      status: 403,
      body: { ok: false, error_code: 403, description: 'Forbidden: bot was blocked by the user' },
    });
    await control('/faults', { channel: 'bot', account: BOT_ID, mode: 'rate_limit' });
    expect(await call('sendMessage', { chat_id: Number(USER), text: 'olá' })).toEqual({
      status: 429,
      body: {
        ok: false,
        error_code: 429,
        description: 'Too Many Requests: retry after 5',
        parameters: { retry_after: 5 },
      },
    });
  });
});

describe("bot: Telegram's redelivery of an update its webhook did not take", () => {
  // Telegram's own waits times a thousandth.
  const env = sandboxAndReceiver({ redeliveryDelayScale: 0.001 });
  const { sandbox } = env;
  let base = '';
  let receiver: Receiver;
  beforeEach(async () => {
    ({ base, receiver } = env);
    await postJson(`${base}/bot/bot${TOKEN}/setWebhook`, {
      url: `${receiver.url}/hook`,
      secret_token: SECRET,
    });
  });
  const inbound = async (from = USER, text = 'oi') =>
    (await (
      await postJson(`${base}/_sandbox/inbound`, { channel: 'bot', account: BOT_ID, from, text })
    ).json()) as Record<string, unknown>;
  const textOf = (rawBody: string) => (JSON.parse(rawBody) as { message: { text: string } }).message.text;

  it('delivers the same update again after any answer but a 2xx, a 4xx included, the first time at once', async () => {
    receiver.answers.push(404, 500, 429);
    expect(await inbound()).toMatchObject({ delivered_status: 404, redelivering: true });
    await sandbox.redelivered();
    const bodies = receiver.posts().map((call) => call.rawBody);
    expect(bodies).toHaveLength(4);
    expect(new Set(bodies).size).toBe(1);
    const made = (await (await fetch(`${base}/_sandbox/redeliveries?channel=bot`)).json()) as unknown[];
    expect(made).toEqual([
      expect.objectContaining({ attempt: 2, status: 500 }),
      expect.objectContaining({ attempt: 3, status: 429 }),
      expect.objectContaining({ attempt: 4, status: 200 }),
    ]);
  });

  it("waits the answer's Retry-After instead of its own backoff", async () => {
    // An hour, here 3.6 s: the retry Telegram would make at once waits for it.
    receiver.answers.push({ status: 429, headers: { 'retry-after': '3600' } });
    expect(await inbound()).toMatchObject({ delivered_status: 429, redelivering: true });
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(receiver.posts()).toHaveLength(1);
    sandbox.reset();
  });

  it("holds a chat's later updates until the one being delivered is taken, and delivers other chats' meanwhile", async () => {
    // 500 s, here half a second: the first update waits that long for its second try.
    receiver.answers.push({ status: 429, headers: { 'retry-after': '500' } });
    expect(await inbound(USER, 'primeira')).toMatchObject({ delivered_status: 429, redelivering: true });
    const held = await inbound(USER, 'segunda');
    expect(held).toMatchObject({ ok: true, held: true });
    expect(held).not.toHaveProperty('delivered_status');
    expect(await inbound('111222333', 'outro chat')).toMatchObject({ delivered_status: 200 });
    expect(receiver.posts().map((call) => textOf(call.rawBody))).toEqual(['primeira', 'outro chat']);
    await sandbox.redelivered();
    expect(receiver.posts().map((call) => textOf(call.rawBody))).toEqual([
      'primeira',
      'outro chat',
      'primeira',
      'segunda',
    ]);
    const made = (await (await fetch(`${base}/_sandbox/redeliveries?channel=bot`)).json()) as unknown[];
    expect(made).toEqual([
      expect.objectContaining({ attempt: 2, status: 200 }),
      expect.objectContaining({ attempt: 1, status: 200 }),
    ]);
    // The chat is free again: its next update goes out at once.
    expect(await inbound(USER, 'terceira')).toMatchObject({ delivered_status: 200 });
  });
});

describe("bot: Telegram's wait before delivering an update again", () => {
  const answer = (status: number, retryAfter: string | null = null): WebhookAnswer => ({
    status,
    retryAfter,
  });
  const waitsAfter = (...answers: (WebhookAnswer | undefined)[]) =>
    telegramRedelivery.nextWaitMs({
      failures: answers.length,
      answer: answers.at(-1),
      answers,
      elapsedMs: 0,
    });

  it('doubles its delay only on answers without Retry-After, from the second failure', () => {
    expect(waitsAfter(answer(500))).toBe(0);
    expect(waitsAfter(answer(500), undefined)).toBe(2_000);
    expect(waitsAfter(answer(500), undefined, answer(429, '5'))).toBe(5_000);
    // The Retry-After left the delay at 2 s: doubled once more, not twice.
    expect(waitsAfter(answer(500), undefined, answer(429, '5'), answer(502))).toBe(4_000);
    // A first failure with Retry-After: the next without one is the first doubling.
    expect(waitsAfter(answer(429, '7'))).toBe(7_000);
    expect(waitsAfter(answer(429, '7'), answer(500))).toBe(2_000);
  });

  it('waits at most a random 60 to 120 s of its own, at most an hour when asked, and drops an update past a day', () => {
    const many = Array.from({ length: 30 }, () => answer(500));
    for (let i = 0; i < 20; i++) {
      const wait = waitsAfter(...many)!;
      expect(wait % 1_000).toBe(0);
      expect(wait).toBeGreaterThanOrEqual(60_000);
      expect(wait).toBeLessThanOrEqual(120_000);
    }
    expect(waitsAfter(answer(429, '99999'))).toBe(3_600_000);
    // Not a whole number of seconds: no Retry-After at all.
    expect(waitsAfter(answer(500), answer(429, '1.5'))).toBe(2_000);
    expect(
      telegramRedelivery.nextWaitMs({
        failures: 1,
        answer: answer(429, '60'),
        answers: [answer(429, '60')],
        elapsedMs: 24 * 3_600_000 - 30_000,
      }),
    ).toBeUndefined();
  });
});
