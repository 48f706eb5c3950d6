import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { waitFor } from '@inbox/testkit';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createSandbox } from '../src/index.js';
import { close, listen, postJson, type ReceivedCall, type Receiver, startReceiver } from './support.js';

const PHONE_ID = '1098765432';
const TOKEN = 'EAAG-sandbox-token';
const APP_SECRET = 'app-secret-1';
const CUSTOMER = '5511999990000';
const HOUR_MS = 60 * 60 * 1000;
const WAMID = /^wamid\.[A-Za-z0-9_-]{32,}$/;
/** A business-scoped user id: the user's country, a dot, digits. */
const BSUID = /^[A-Z]{2}\.\d{19}$/;

interface GraphErrorBody {
  error: {
    message: string;
    type: string;
    code: number;
    error_subcode?: number;
    error_data: { messaging_product: string; details: string };
    fbtrace_id: string;
  };
}

interface SendAnswer {
  messaging_product: string;
  contacts: Array<{ input: string; wa_id: string }>;
  messages: Array<{ id: string; message_status?: string }>;
}

interface Notification {
  object: string;
  entry: Array<{
    id: string;
    changes: Array<{ field: string; value: Record<string, unknown> }>;
  }>;
}

/** The check the connector makes: HMAC-SHA256 of the raw bytes with the app secret. */
function signatureIsValid(call: ReceivedCall, secret: string): boolean {
  const header = call.headers['x-hub-signature-256'];
  if (typeof header !== 'string' || !header.startsWith('sha256=')) return false;
  const expected = createHmac('sha256', secret).update(call.rawBody).digest();
  const given = Buffer.from(header.slice('sha256='.length), 'hex');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

const textMessage = (to = CUSTOMER, body = 'hello') => ({
  messaging_product: 'whatsapp',
  recipient_type: 'individual',
  to,
  type: 'text',
  text: { body, preview_url: false },
});

describe('chat-official (Cloud API) emulation', () => {
  // The receiver standing in for the connector serves plain HTTP, as the local stacks' connector does.
  const sandbox = createSandbox({ httpCallbacks: 'allow' });
  let base = '';
  let sandboxServer: Server;
  let receiver: Receiver;

  beforeAll(async () => {
    ({ server: sandboxServer, url: base } = await listen(sandbox));
    receiver = await startReceiver();
  });

  afterAll(async () => {
    await close(sandboxServer);
    await close(receiver.server);
  });

  beforeEach(() => {
    sandbox.reset();
    receiver.calls.length = 0;
    receiver.handshake = 'echo';
  });

  const control = (path: string, body: unknown) => postJson(`${base}/_sandbox${path}`, body);

  /** `null` sends no Authorization header at all. */
  function send(body: unknown, token: string | null = TOKEN, phoneId = PHONE_ID, version = 'v21.0') {
    return postJson(
      `${base}/chat-official/${version}/${phoneId}/messages`,
      body,
      token === null ? {} : { authorization: `Bearer ${token}` },
    );
  }

  /** `POST /{waba-id}/subscribed_apps`, with the WABA's own alternate callback when `body` has one. */
  function subscribe(wabaId = `waba-${PHONE_ID}`, body?: unknown, token = TOKEN) {
    return fetch(`${base}/chat-official/v21.0/${wabaId}/subscribed_apps`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  }

  /** The phone number's alternate callback, after subscribing the app to its WABA as Meta requires. */
  async function registerOverride(url: string, verifyToken = 'verify-me', token = TOKEN) {
    expect((await subscribe(`waba-${PHONE_ID}`, undefined, token)).status).toBe(200);
    return overridePhone(url, verifyToken, token);
  }

  function overridePhone(url: string, verifyToken = 'verify-me', token = TOKEN, phoneId = PHONE_ID) {
    return postJson(
      `${base}/chat-official/v21.0/${phoneId}`,
      { webhook_configuration: { override_callback_uri: url, verify_token: verifyToken } },
      { authorization: `Bearer ${token}` },
    );
  }

  function setWindow(number: string, lastInboundAt: Date, account = PHONE_ID) {
    return control('/windows', {
      channel: 'chat-official',
      account,
      number,
      last_inbound_at: lastInboundAt.toISOString(),
    });
  }

  function registerTemplate(template: Record<string, unknown>) {
    return control('/templates', { account: PHONE_ID, language: 'pt_BR', ...template });
  }

  function listTemplates(wabaId: string, query = '', token = TOKEN) {
    return fetch(`${base}/chat-official/v21.0/${wabaId}/message_templates${query}`, {
      headers: { authorization: `Bearer ${token}` },
    });
  }

  async function sent(query = ''): Promise<Array<Record<string, unknown>>> {
    const res = await fetch(`${base}/_sandbox/sent${query}`);
    expect(res.status).toBe(200);
    return (await res.json()) as Array<Record<string, unknown>>;
  }

  /** Graph's own token errors carry no `error_data`; WhatsApp's errors always do. */
  async function expectGraphError(
    res: Response,
    status: number,
    code: number,
    message: string | RegExp,
    subcode?: number,
  ) {
    expect(res.status).toBe(status);
    const body = (await res.json()) as GraphErrorBody;
    expect(body).toEqual({
      error: {
        message: typeof message === 'string' ? message : expect.stringMatching(message),
        type: 'OAuthException',
        code,
        ...(subcode === undefined ? {} : { error_subcode: subcode }),
        ...(code === 190
          ? {}
          : { error_data: { messaging_product: 'whatsapp', details: expect.any(String) } }),
        fbtrace_id: expect.any(String),
      },
    });
    expect(body.error.fbtrace_id.length).toBeGreaterThan(0);
    return body.error;
  }

  const PROMO = {
    name: 'promo',
    body: 'Olá {{1}}, seu pedido {{2}} chegou. Obrigado, {{1}}!',
    header: { format: 'IMAGE' },
    buttons: [{ type: 'URL', text: 'Ver pedido', url: 'https://shop.test/orders/{{1}}' }],
  };

  const promoSend = (components: unknown[], to = CUSTOMER, name = 'promo', code = 'pt_BR') => ({
    messaging_product: 'whatsapp',
    to,
    type: 'template',
    template: { name, language: { code }, components },
  });

  const imageHeader = (link = 'https://cdn.test/banner.png') => ({
    type: 'header',
    parameters: [{ type: 'image', image: { link } }],
  });
  const bodyParams = (...texts: string[]) => ({
    type: 'body',
    parameters: texts.map((text) => ({ type: 'text', text })),
  });
  const urlButton = {
    type: 'button',
    sub_type: 'url',
    index: '0',
    parameters: [{ type: 'text', text: 'A-1' }],
  };

  describe('appsecret_proof', () => {
    const proof = (secret: string, token = TOKEN) => createHmac('sha256', secret).update(token).digest('hex');
    const sendWithProof = (given?: string, token = TOKEN) =>
      postJson(
        `${base}/chat-official/v21.0/${PHONE_ID}/messages${given === undefined ? '' : `?appsecret_proof=${given}`}`,
        textMessage(),
        { authorization: `Bearer ${token}` },
      );
    const graphMethodError = (message: string) => ({
      error: { message, type: 'GraphMethodException', code: 100, fbtrace_id: expect.any(String) },
    });

    it("refuses a proof that is not the app's, wherever it is given, once the app's secret is known", async () => {
      // Unknown to the sandbox (Meta knows it): no proof can be checked yet.
      expect((await sendWithProof(proof('any'))).status).toBe(200);
      await control('/chat-official/app-secret', { account: PHONE_ID, app_secret: APP_SECRET });
      const wrong = await sendWithProof(proof('another-apps-secret'));
      expect(wrong.status).toBe(400);
      expect(await wrong.json()).toEqual(
        graphMethodError('Invalid appsecret_proof provided in the API argument'),
      );
      expect((await sendWithProof(proof(APP_SECRET))).status).toBe(200);
      // The WABA's calls are checked against the secret of the app behind its numbers; a body may carry it.
      const subscribed = await postJson(
        `${base}/chat-official/v21.0/waba-${PHONE_ID}/subscribed_apps`,
        { appsecret_proof: proof('another-apps-secret') },
        { authorization: `Bearer ${TOKEN}` },
      );
      expect(subscribed.status).toBe(400);
      // Without one, an app that does not require it takes the call.
      expect((await sendWithProof()).status).toBe(200);
    });

    it("checks no proof against the secret an inbound control forged with: it is not the app's", async () => {
      await registerOverride(`${receiver.url}/hooks/meta`);
      // A test forging a signature names a secret first; the app's is never declared.
      await control('/inbound', {
        channel: 'chat-official',
        account: PHONE_ID,
        from: CUSTOMER,
        text: 'forjada',
        app_secret: 'a-forgery',
      });
      expect((await sendWithProof(proof('the-apps-real-secret'))).status).toBe(200);
    });

    it('refuses a call without a proof once the app requires one ("Require App Secret")', async () => {
      await control('/chat-official/app-secret', {
        account: PHONE_ID,
        app_secret: APP_SECRET,
        require_proof: true,
      });
      const bare = await sendWithProof();
      expect(bare.status).toBe(400);
      expect(await bare.json()).toEqual(
        graphMethodError('API calls from the server require an appsecret_proof argument'),
      );
      expect((await sendWithProof(proof(APP_SECRET))).status).toBe(200);
    });
  });

  describe('text send', () => {
    it('answers 200 in the Cloud API shape inside the window and records the request', async () => {
      expect((await setWindow(CUSTOMER, new Date(Date.now() - HOUR_MS))).status).toBe(200);

      const body = textMessage();
      const res = await send(body);
      expect(res.status).toBe(200);
      const answer = (await res.json()) as SendAnswer;
      expect(answer).toEqual({
        messaging_product: 'whatsapp',
        contacts: [{ input: CUSTOMER, wa_id: CUSTOMER }],
        messages: [{ id: expect.stringMatching(WAMID) }],
      });

      expect(await sent('?channel=chat-official')).toEqual([
        {
          channel: 'chat-official',
          account: PHONE_ID,
          to: CUSTOMER,
          method: 'POST',
          path: `/chat-official/v21.0/${PHONE_ID}/messages`,
          body,
          provider_message_id: answer.messages[0]?.id,
          received_at: expect.any(String),
        },
      ]);
    });

    it('issues a different wamid for every send', async () => {
      await setWindow(CUSTOMER, new Date());
      const ids = new Set<string>();
      for (let i = 0; i < 3; i++) {
        const answer = (await (await send(textMessage())).json()) as SendAnswer;
        ids.add(answer.messages[0]?.id ?? '');
      }
      expect(ids.size).toBe(3);
    });

    it('accepts free text to a number that never wrote, and fails it later with a 131047 status', async () => {
      await registerOverride(`${receiver.url}/hooks/meta`);
      await control('/chat-official/app-secret', { account: PHONE_ID, app_secret: APP_SECRET });

      const res = await send(textMessage());
      // Meta answers the send as usual: the window is only found closed after it was accepted.
      expect(res.status).toBe(200);
      const wamid = ((await res.json()) as SendAnswer).messages[0]?.id;
      expect(wamid).toMatch(WAMID);
      expect(await sent()).toHaveLength(1);

      const failure = await waitFor(() => receiver.posts()[0], { what: 'the failed status notification' });
      expect(signatureIsValid(failure, APP_SECRET)).toBe(true);
      const notification = JSON.parse(failure.rawBody) as Notification;
      expect(notification.entry[0]?.changes[0]?.value.statuses).toEqual([
        {
          id: wamid,
          status: 'failed',
          timestamp: expect.stringMatching(/^\d+$/),
          recipient_id: CUSTOMER,
          errors: [
            {
              code: 131047,
              title: 'Re-engagement message',
              message: 'Re-engagement message',
              error_data: {
                details:
                  'Message failed to send because more than 24 hours have passed since the customer last replied to this number.',
              },
              href: 'https://developers.facebook.com/docs/whatsapp/cloud-api/support/error-codes/',
            },
          ],
        },
      ]);
    });

    it('accepts a send to a number with no WhatsApp, and fails it later with a 131026 status, window open or not', async () => {
      await registerOverride(`${receiver.url}/hooks/meta`);
      await control('/chat-official/app-secret', { account: PHONE_ID, app_secret: APP_SECRET });
      await control('/without-whatsapp', { number: CUSTOMER });
      await setWindow(CUSTOMER, new Date());
      const res = await send(textMessage());
      expect(res.status).toBe(200);
      const wamid = ((await res.json()) as SendAnswer).messages[0]?.id;
      const failure = await waitFor(() => receiver.posts()[0], { what: 'the failed status notification' });
      const notification = JSON.parse(failure.rawBody) as Notification;
      expect(notification.entry[0]?.changes[0]?.value.statuses).toMatchObject([
        { id: wamid, status: 'failed', recipient_id: CUSTOMER, errors: [{ code: 131026 }] },
      ]);
    });

    it('repeats biz_opaque_callback_data in the statuses of the message, and refuses one over 512 characters', async () => {
      await registerOverride(`${receiver.url}/hooks/meta`);
      await control('/chat-official/app-secret', { account: PHONE_ID, app_secret: APP_SECRET });
      const res = await send({ ...textMessage(), biz_opaque_callback_data: 'pedido-77' });
      const wamid = ((await res.json()) as SendAnswer).messages[0]?.id;
      const failure = await waitFor(() => receiver.posts()[0], { what: 'the failed status notification' });
      const notification = JSON.parse(failure.rawBody) as Notification;
      expect(notification.entry[0]?.changes[0]?.value.statuses).toEqual([
        expect.objectContaining({ id: wamid, status: 'failed', biz_opaque_callback_data: 'pedido-77' }),
      ]);
      await control('/status', {
        channel: 'chat-official',
        account: PHONE_ID,
        message_id: wamid,
        status: 'read',
        app_secret: APP_SECRET,
      });
      const read = await waitFor(() => receiver.posts()[1], { what: 'the read status notification' });
      expect((JSON.parse(read.rawBody) as Notification).entry[0]?.changes[0]?.value.statuses).toEqual([
        expect.objectContaining({ id: wamid, status: 'read', biz_opaque_callback_data: 'pedido-77' }),
      ]);

      const error = await expectGraphError(
        await send({ ...textMessage(), biz_opaque_callback_data: 'x'.repeat(513) }),
        400,
        100,
        '(#100) Invalid parameter',
      );
      expect(error.error_data.details).toContain('biz_opaque_callback_data');
    });

    it('fails free text once the last inbound is 25 hours old, and delivers it at 23 hours', async () => {
      await registerOverride(`${receiver.url}/hooks/meta`);
      await control('/chat-official/app-secret', { account: PHONE_ID, app_secret: APP_SECRET });
      expect((await setWindow(CUSTOMER, new Date(Date.now() - 23 * HOUR_MS))).status).toBe(200);
      const inside = ((await (await send(textMessage())).json()) as SendAnswer).messages[0]?.id;
      expect((await setWindow(CUSTOMER, new Date(Date.now() - 25 * HOUR_MS))).status).toBe(200);
      const outside = ((await (await send(textMessage())).json()) as SendAnswer).messages[0]?.id;

      const failure = await waitFor(() => receiver.posts()[0], { what: 'the failed status notification' });
      const statuses = (JSON.parse(failure.rawBody) as Notification).entry[0]?.changes[0]?.value
        .statuses as Array<{ id: string }>;
      expect(statuses.map((status) => status.id)).toEqual([outside]);
      expect(outside).not.toBe(inside);
      // Only the message outside the window failed: one notification came, for it.
      await sandbox.idle();
      expect(receiver.posts()).toHaveLength(1);
    });

    it('keeps windows per phone number id', async () => {
      await registerOverride(`${receiver.url}/hooks/meta`);
      await control('/chat-official/app-secret', { account: PHONE_ID, app_secret: APP_SECRET });
      await setWindow(CUSTOMER, new Date(), 'other-phone-id');
      const closed = ((await (await send(textMessage())).json()) as SendAnswer).messages[0]?.id;
      const failure = await waitFor(() => receiver.posts()[0], { what: 'the failed status notification' });
      expect(failure.rawBody).toContain(closed);
      expect((await send(textMessage(), TOKEN, 'other-phone-id')).status).toBe(200);
    });

    it('posts nothing of its own accord without an app secret to sign with', async () => {
      await registerOverride(`${receiver.url}/hooks/meta`);
      expect((await send(textMessage())).status).toBe(200);
      await sandbox.idle();
      expect(receiver.posts()).toEqual([]);
    });

    it('refuses a call without a bearer token with 190', async () => {
      await setWindow(CUSTOMER, new Date());
      await expectGraphError(
        await send(textMessage(), null),
        401,
        190,
        'Invalid OAuth access token - Cannot parse access token',
      );
      const basic = await postJson(`${base}/chat-official/v21.0/${PHONE_ID}/messages`, textMessage(), {
        authorization: 'Basic dXNlcjpwYXNz',
      });
      await expectGraphError(basic, 401, 190, 'Invalid OAuth access token - Cannot parse access token');
      expect(await sent()).toEqual([]);
    });

    it('refuses a token that differs from the first one seen for the phone number id with 190', async () => {
      await setWindow(CUSTOMER, new Date());
      expect((await send(textMessage())).status).toBe(200);
      await expectGraphError(
        await send(textMessage(), 'another-token'),
        401,
        190,
        'Invalid OAuth access token - Cannot parse access token',
      );
      // Tokens are per phone number id.
      await setWindow(CUSTOMER, new Date(), 'second-phone');
      expect((await send(textMessage(), 'another-token', 'second-phone')).status).toBe(200);
    });

    it.each([
      ['no to', { messaging_product: 'whatsapp', type: 'text', text: { body: 'hi' } }, 'to is required'],
      ['an unknown type', { ...textMessage(), type: 'sticker' }, 'type must be text or template'],
      ['text without body', { ...textMessage(), text: { preview_url: false } }, 'text.body is required'],
      ['no text at all', { messaging_product: 'whatsapp', to: CUSTOMER, type: 'text' }, 'text is required'],
      ['no messaging_product', { to: CUSTOMER, type: 'text', text: { body: 'hi' } }, 'messaging_product'],
    ])('refuses a body with %s with 100', async (_case, body, details) => {
      await setWindow(CUSTOMER, new Date());
      const error = await expectGraphError(await send(body), 400, 100, '(#100) Invalid parameter');
      expect(error.error_data.details).toContain(details);
      expect(await sent()).toEqual([]);
    });

    it('answers malformed JSON in the Graph shape too', async () => {
      await expectGraphError(await send('{"to": '), 400, 100, '(#100) Invalid parameter');
    });

    it('answers a path with a malformed version with a Graph error', async () => {
      await expectGraphError(
        await send(textMessage(), TOKEN, PHONE_ID, 'v21'),
        400,
        2500,
        `Unknown path components: /v21/${PHONE_ID}/messages`,
      );
    });

    it('accepts any version of the form vN.N', async () => {
      await setWindow(CUSTOMER, new Date());
      expect((await send(textMessage(), TOKEN, PHONE_ID, 'v19.0')).status).toBe(200);
      expect((await send(textMessage(), TOKEN, PHONE_ID, 'v23.1')).status).toBe(200);
    });
  });

  describe('template send', () => {
    it('accepts an approved template outside the window and answers message_status accepted', async () => {
      expect((await registerTemplate(PROMO)).status).toBe(201);

      const body = promoSend([imageHeader(), bodyParams('Ana', 'A-1'), urlButton]);
      const res = await send(body);
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({
        messaging_product: 'whatsapp',
        contacts: [{ input: CUSTOMER, wa_id: CUSTOMER }],
        messages: [{ id: expect.stringMatching(WAMID), message_status: 'accepted' }],
      });
      const log = await sent(`?to=${CUSTOMER}`);
      expect(log).toHaveLength(1);
      expect(log[0]?.body).toEqual(body);
    });

    it('accepts video and document headers with filename, and a template without placeholders', async () => {
      await registerTemplate({ name: 'clip', body: 'Veja o vídeo', header: { format: 'VIDEO' } });
      await registerTemplate({ name: 'invoice', body: 'Sua fatura', header: { format: 'DOCUMENT' } });
      const video = promoSend(
        [{ type: 'header', parameters: [{ type: 'video', video: { link: 'http://cdn.test/a.mp4' } }] }],
        CUSTOMER,
        'clip',
      );
      const document = promoSend(
        [
          {
            type: 'header',
            parameters: [
              { type: 'document', document: { link: 'https://cdn.test/f.pdf', filename: 'fatura.pdf' } },
            ],
          },
        ],
        CUSTOMER,
        'invoice',
      );
      expect((await send(video)).status).toBe(200);
      expect((await send(document)).status).toBe(200);
    });

    it('refuses an unknown name, another language and an unapproved template with 132001', async () => {
      await registerTemplate(PROMO);
      await registerTemplate({ name: 'pending', body: 'Oi', status: 'PENDING' });
      await registerTemplate({ name: 'rejected', body: 'Oi', status: 'REJECTED' });

      const unknown = await expectGraphError(
        await send(promoSend([bodyParams('a', 'b')], CUSTOMER, 'nope')),
        404,
        132001,
        '(#132001) Template name does not exist in the translation',
      );
      expect(unknown.error_data.details).toBe('template name (nope) does not exist in pt_BR');

      const english = await expectGraphError(
        await send(promoSend([imageHeader(), bodyParams('a', 'b')], CUSTOMER, 'promo', 'en_US')),
        404,
        132001,
        '(#132001) Template name does not exist in the translation',
      );
      expect(english.error_data.details).toBe('template name (promo) does not exist in en_US');

      for (const name of ['pending', 'rejected']) {
        await expectGraphError(
          await send(promoSend([], CUSTOMER, name)),
          404,
          132001,
          '(#132001) Template name does not exist in the translation',
        );
      }
      expect(await sent()).toEqual([]);
    });

    it('checks templates per phone number id', async () => {
      await registerTemplate({ account: 'other-phone', name: 'hello', body: 'Oi' });
      await expectGraphError(
        await send(promoSend([], CUSTOMER, 'hello')),
        404,
        132001,
        '(#132001) Template name does not exist in the translation',
      );
      expect((await send(promoSend([], CUSTOMER, 'hello'), TOKEN, 'other-phone')).status).toBe(200);
    });

    it('refuses a body parameter count that differs from the distinct placeholders with 132000', async () => {
      await registerTemplate(PROMO);
      // Three placeholders, two of them the same: two parameters are expected.
      for (const params of [['Ana'], ['Ana', 'A-1', 'Ana']]) {
        const error = await expectGraphError(
          await send(promoSend([imageHeader(), bodyParams(...params)])),
          400,
          132000,
          '(#132000) Number of parameters does not match the expected number of params',
        );
        expect(error.error_data.details).toContain(`(${params.length})`);
      }
      await expectGraphError(
        await send(promoSend([imageHeader()])),
        400,
        132000,
        '(#132000) Number of parameters does not match the expected number of params',
      );
      expect(await sent()).toEqual([]);
    });

    it.each([
      ['no header component', [bodyParams('Ana', 'A-1')], 'an image parameter is required'],
      [
        'a header parameter of another type',
        [
          // Carries an image link too, so only the type is wrong.
          {
            type: 'header',
            parameters: [
              {
                type: 'video',
                video: { link: 'https://cdn.test/a.mp4' },
                image: { link: 'https://cdn.test/b.png' },
              },
            ],
          },
          bodyParams('Ana', 'A-1'),
        ],
        'expected an image parameter, received video',
      ],
      [
        'a link that is not http(s)',
        [imageHeader('ftp://cdn.test/banner.png'), bodyParams('Ana', 'A-1')],
        'image.link must be an http(s) URL',
      ],
      [
        'a link that is not a URL',
        [imageHeader('banner.png'), bodyParams('Ana', 'A-1')],
        'image.link must be an http(s) URL',
      ],
      [
        'a media id instead of a link',
        [{ type: 'header', parameters: [{ type: 'image', image: { id: '123' } }] }, bodyParams('Ana', 'A-1')],
        'image.link must be an http(s) URL',
      ],
    ])('refuses a media header template send with %s with 131053', async (_case, components, details) => {
      await registerTemplate(PROMO);
      const error = await expectGraphError(
        await send(promoSend(components)),
        400,
        131053,
        '(#131053) Media upload error',
      );
      expect(error.error_data.details).toContain(details);
      expect(await sent()).toEqual([]);
    });

    it('refuses a template message without template.name with 100', async () => {
      const error = await expectGraphError(
        await send({ messaging_product: 'whatsapp', to: CUSTOMER, type: 'template', template: {} }),
        400,
        100,
        '(#100) Invalid parameter',
      );
      expect(error.error_data.details).toContain('template.name');
    });
  });

  describe('faults', () => {
    it('answers the fault status with 131000 until turned off', async () => {
      await registerTemplate({ name: 'hello', body: 'Oi' });
      const on = await control('/faults', { channel: 'chat-official', mode: 'error', status: 503 });
      expect(on.status).toBe(200);
      const error = await expectGraphError(
        await send(promoSend([], CUSTOMER, 'hello')),
        503,
        131000,
        '(#131000) Something went wrong',
      );
      expect(error.error_data.messaging_product).toBe('whatsapp');

      await control('/faults', { channel: 'chat-official', mode: 'off' });
      expect((await send(promoSend([], CUSTOMER, 'hello'))).status).toBe(200);
    });

    it('defaults to 500 and scopes an account fault to that phone number id', async () => {
      await control('/faults', { channel: 'chat-official', account: PHONE_ID, mode: 'error' });
      await expectGraphError(await send(textMessage()), 500, 131000, '(#131000) Something went wrong');
      // Another phone number is not faulted.
      expect((await send(textMessage(), TOKEN, 'healthy-phone')).status).toBe(200);
    });

    it('still checks the token before the fault', async () => {
      await control('/faults', { channel: 'chat-official', mode: 'error' });
      await expectGraphError(
        await send(textMessage(), null),
        401,
        190,
        'Invalid OAuth access token - Cannot parse access token',
      );
    });

    /** A send whose answer does not come within 300 ms; then the caller gives up on it. */
    async function expectHeldAnswer() {
      const controller = new AbortController();
      const settled = fetch(`${base}/chat-official/v21.0/${PHONE_ID}/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
        body: JSON.stringify(textMessage()),
        signal: controller.signal,
      }).then(
        () => 'answered',
        () => 'aborted',
      );
      const outcome = await Promise.race([settled, new Promise((r) => setTimeout(r, 300, 'held'))]);
      expect(outcome).toBe('held');
      controller.abort();
      expect(await settled).toBe('aborted');
    }

    it('takes and records the message in lost_answer mode, holding only the answer', async () => {
      await control('/faults', { channel: 'chat-official', mode: 'lost_answer' });
      await expectHeldAnswer();
      expect(await sent()).toEqual([
        expect.objectContaining({ provider_message_id: expect.stringMatching(WAMID) }),
      ]);
      const elsewhere = await control('/faults', { channel: 'alt-b', mode: 'lost_answer' });
      expect(elsewhere.status).toBe(400);
    });

    it('holds the call in timeout mode', async () => {
      await control('/faults', { channel: 'chat-official', mode: 'timeout' });
      await expectHeldAnswer();
    });
  });

  describe('template list', () => {
    it('pages 30 templates by 25 with a next URL that leads to the rest', async () => {
      for (let i = 0; i < 30; i++) {
        const res = await registerTemplate({ waba_id: 'waba-77', name: `t${i}`, body: `Body ${i} {{1}}` });
        expect(res.status).toBe(201);
      }

      const first = await listTemplates('waba-77', '?limit=25');
      expect(first.status).toBe(200);
      const page1 = (await first.json()) as {
        data: Array<{ name: string }>;
        paging: { cursors: { before: string; after: string }; next?: string };
      };
      expect(page1.data.map((t) => t.name)).toEqual(Array.from({ length: 25 }, (_, i) => `t${i}`));
      expect(page1.paging.cursors.before).toEqual(expect.any(String));
      expect(page1.paging.cursors.after).toEqual(expect.any(String));
      expect(page1.paging.next).toBeDefined();
      const next = new URL(page1.paging.next ?? '');
      expect(`${next.origin}${next.pathname}`).toBe(`${base}/chat-official/v21.0/waba-77/message_templates`);
      expect(next.searchParams.get('after')).toBe(page1.paging.cursors.after);

      const second = await fetch(page1.paging.next ?? '', { headers: { authorization: `Bearer ${TOKEN}` } });
      expect(second.status).toBe(200);
      const page2 = (await second.json()) as typeof page1;
      expect(page2.data.map((t) => t.name)).toEqual(['t25', 't26', 't27', 't28', 't29']);
      expect(page2.paging.next).toBeUndefined();
      expect(page2.paging.cursors.before).not.toBe(page1.paging.cursors.before);
    });

    it('pages by 25 when no limit is given', async () => {
      for (let i = 0; i < 26; i++) await registerTemplate({ name: `t${i}`, body: 'Oi' });
      const page = (await (await listTemplates(`waba-${PHONE_ID}`)).json()) as {
        data: unknown[];
        paging: { next?: string };
      };
      expect(page.data).toHaveLength(25);
      expect(page.paging.next).toBeDefined();
    });

    it('shows each template in the Graph shape, under the default waba id', async () => {
      await registerTemplate({
        ...PROMO,
        buttons: [...PROMO.buttons, { type: 'QUICK_REPLY', text: 'Parar' }],
        header: { format: 'IMAGE', example: 'https://cdn.test/sample.png' },
      });
      await registerTemplate({ name: 'pending', language: 'en_US', body: 'Hi', status: 'PENDING' });

      const res = await listTemplates(`waba-${PHONE_ID}`);
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({
        data: [
          {
            id: expect.stringMatching(/^\d+$/),
            name: 'promo',
            language: 'pt_BR',
            status: 'APPROVED',
            category: 'MARKETING',
            components: [
              {
                type: 'HEADER',
                format: 'IMAGE',
                example: { header_handle: ['https://cdn.test/sample.png'] },
              },
              { type: 'BODY', text: PROMO.body },
              {
                type: 'BUTTONS',
                buttons: [
                  { type: 'URL', text: 'Ver pedido', url: 'https://shop.test/orders/{{1}}' },
                  { type: 'QUICK_REPLY', text: 'Parar' },
                ],
              },
            ],
          },
          {
            id: expect.stringMatching(/^\d+$/),
            name: 'pending',
            language: 'en_US',
            status: 'PENDING',
            category: 'MARKETING',
            components: [{ type: 'BODY', text: 'Hi' }],
          },
        ],
        paging: { cursors: { before: expect.any(String), after: expect.any(String) } },
      });
      // Another business account has none of them.
      expect(((await (await listTemplates('waba-other')).json()) as { data: unknown[] }).data).toEqual([]);
    });

    it('replaces a template registered again with the same name and language', async () => {
      await registerTemplate({ name: 'hello', body: 'Oi {{1}}' });
      await registerTemplate({ name: 'hello', language: 'en_US', body: 'Hi {{1}}' });
      await registerTemplate({ name: 'hello', body: 'Olá {{1}} e {{2}}' });

      const list = (await (await listTemplates(`waba-${PHONE_ID}`)).json()) as {
        data: Array<{ language: string; components: Array<{ text?: string }> }>;
      };
      expect(list.data.map((t) => [t.language, t.components[0]?.text])).toEqual([
        ['pt_BR', 'Olá {{1}} e {{2}}'],
        ['en_US', 'Hi {{1}}'],
      ]);
      // Sends check against the new body.
      await expectGraphError(
        await send(promoSend([bodyParams('Ana')], CUSTOMER, 'hello')),
        400,
        132000,
        '(#132000) Number of parameters does not match the expected number of params',
      );
      expect((await send(promoSend([bodyParams('Ana', 'B')], CUSTOMER, 'hello'))).status).toBe(200);
    });

    it('requires a consistent bearer token', async () => {
      const missing = await fetch(`${base}/chat-official/v21.0/waba-1/message_templates`);
      await expectGraphError(missing, 401, 190, 'Invalid OAuth access token - Cannot parse access token');
      expect((await listTemplates('waba-1')).status).toBe(200);
      await expectGraphError(
        await listTemplates('waba-1', '', 'other'),
        401,
        190,
        'Invalid OAuth access token - Cannot parse access token',
      );
    });

    it('refuses a bad limit or cursor with 100', async () => {
      await expectGraphError(await listTemplates('waba-1', '?limit=0'), 400, 100, '(#100) Invalid parameter');
      await expectGraphError(
        await listTemplates('waba-1', '?after=bogus'),
        400,
        100,
        '(#100) Invalid parameter',
      );
    });

    it('refuses an invalid registration with 400', async () => {
      for (const body of [
        { account: PHONE_ID, language: 'pt_BR', body: 'Oi' },
        { account: PHONE_ID, name: 'x', language: 'pt_BR', body: 'Oi', header: { format: 'GIF' } },
        { account: PHONE_ID, name: 'x', language: 'pt_BR', body: 'Oi', status: 'MAYBE' },
        { account: PHONE_ID, name: 'x', language: 'pt_BR', body: 'Oi', buttons: [{ type: 'CALL' }] },
      ]) {
        const res = await control('/templates', body);
        expect(res.status).toBe(400);
        expect(((await res.json()) as { error: string }).error).toEqual(expect.any(String));
      }
    });
  });

  describe('webhook override', () => {
    it('performs the hub.challenge handshake and then remembers the callback', async () => {
      const res = await registerOverride(`${receiver.url}/hooks/meta?tenant=7`, 'verify-me');
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ success: true });

      expect(receiver.calls).toHaveLength(1);
      const handshake = new URL(receiver.calls[0]?.url ?? '', receiver.url);
      expect(receiver.calls[0]?.method).toBe('GET');
      expect(handshake.pathname).toBe('/hooks/meta');
      expect(handshake.searchParams.get('tenant')).toBe('7');
      expect(handshake.searchParams.get('hub.mode')).toBe('subscribe');
      expect(handshake.searchParams.get('hub.verify_token')).toBe('verify-me');
      expect(handshake.searchParams.get('hub.challenge')).toMatch(/^\d+$/);

      const inbound = await control('/inbound', {
        channel: 'chat-official',
        account: PHONE_ID,
        from: CUSTOMER,
        text: 'oi',
        app_secret: APP_SECRET,
      });
      expect(inbound.status).toBe(200);
      expect(receiver.posts()[0]?.url).toBe('/hooks/meta?tenant=7');
    });

    it.each([
      ['answers another body', 'wrong-body' as const, 'HTTP Status Code = 200'],
      ['answers 403', 'forbidden' as const, 'HTTP Status Code = 403'],
    ])('refuses the callback with 2200 when it %s', async (_case, answer, problem) => {
      receiver.handshake = answer;
      const error = await expectGraphError(
        await registerOverride(`${receiver.url}/hooks/meta`),
        400,
        2200,
        /^Callback verification failed with the following errors: /,
      );
      expect(error.message).toContain(problem);

      const inbound = await control('/inbound', {
        channel: 'chat-official',
        account: PHONE_ID,
        from: CUSTOMER,
        text: 'oi',
        app_secret: APP_SECRET,
      });
      expect(inbound.status).toBe(409);
    });

    it('refuses a callback that cannot be reached with 2200', async () => {
      const gone = await startReceiver();
      await close(gone.server);
      const error = await expectGraphError(
        await registerOverride(`${gone.url}/hooks`),
        400,
        2200,
        /^Callback verification failed with the following errors: /,
      );
      expect(error.error_data.details.length).toBeGreaterThan(0);
    });

    it('requires the bearer token and a valid body', async () => {
      expect((await subscribe()).status).toBe(200);
      const noToken = await postJson(`${base}/chat-official/v21.0/${PHONE_ID}`, {
        webhook_configuration: { override_callback_uri: `${receiver.url}/h`, verify_token: 'v' },
      });
      await expectGraphError(noToken, 401, 190, 'Invalid OAuth access token - Cannot parse access token');
      await expectGraphError(
        await postJson(
          `${base}/chat-official/v21.0/${PHONE_ID}`,
          { webhook_configuration: { override_callback_uri: 'not a url', verify_token: 'v' } },
          { authorization: `Bearer ${TOKEN}` },
        ),
        400,
        100,
        '(#100) Invalid parameter',
      );
      expect(receiver.calls).toEqual([]);
    });
  });

  describe('inbound', () => {
    it('posts a signed Cloud API notification, opens the window and returns the wamid', async () => {
      expect((await registerOverride(`${receiver.url}/hooks/meta`)).status).toBe(200);
      const before = Math.floor(Date.now() / 1000);

      const res = await control('/inbound', {
        channel: 'chat-official',
        account: PHONE_ID,
        from: '+55 11 99999-0000',
        name: 'Ana',
        text: 'quero comprar',
        app_secret: APP_SECRET,
      });
      expect(res.status).toBe(200);
      const answer = (await res.json()) as {
        ok: boolean;
        delivered_status: number;
        provider_message_id: string;
      };
      expect(answer).toEqual({
        ok: true,
        delivered_status: 200,
        provider_message_id: expect.stringMatching(WAMID),
      });

      const [webhook] = receiver.posts();
      expect(webhook).toBeDefined();
      if (!webhook) return;
      expect(webhook.url).toBe('/hooks/meta');
      expect(webhook.headers['content-type']).toBe('application/json');
      expect(signatureIsValid(webhook, APP_SECRET)).toBe(true);
      expect(signatureIsValid(webhook, 'another-secret')).toBe(false);

      const notification = JSON.parse(webhook.rawBody) as Notification;
      expect(notification).toEqual({
        object: 'whatsapp_business_account',
        entry: [
          {
            id: `waba-${PHONE_ID}`,
            changes: [
              {
                field: 'messages',
                value: {
                  messaging_product: 'whatsapp',
                  metadata: { display_phone_number: PHONE_ID, phone_number_id: PHONE_ID },
                  // The business-scoped user id beside the number, as every messages webhook since April 2026.
                  contacts: [
                    { profile: { name: 'Ana' }, wa_id: CUSTOMER, user_id: expect.stringMatching(BSUID) },
                  ],
                  messages: [
                    {
                      from: CUSTOMER,
                      from_user_id: expect.stringMatching(BSUID),
                      id: answer.provider_message_id,
                      timestamp: expect.stringMatching(/^\d+$/),
                      type: 'text',
                      text: { body: 'quero comprar' },
                    },
                  ],
                },
              },
            ],
          },
        ],
      });
      const [message] = (notification.entry[0]?.changes[0]?.value.messages ?? []) as Array<{
        timestamp: string;
      }>;
      expect(Number(message?.timestamp)).toBeGreaterThanOrEqual(before);
      expect(Number(message?.timestamp)).toBeLessThanOrEqual(Math.floor(Date.now() / 1000));

      // The customer wrote, so free text is now allowed.
      expect((await send(textMessage())).status).toBe(200);
    });

    it('uses the registered waba id as the entry id and an empty profile name when none is given', async () => {
      await registerTemplate({ waba_id: '4455', name: 'hello', body: 'Oi' });
      expect((await subscribe('4455')).status).toBe(200);
      expect((await overridePhone(`${receiver.url}/hooks/meta`)).status).toBe(200);
      await control('/inbound', {
        channel: 'chat-official',
        account: PHONE_ID,
        from: CUSTOMER,
        text: 'oi',
        app_secret: APP_SECRET,
      });
      const notification = JSON.parse(receiver.posts()[0]?.rawBody ?? '') as Notification;
      expect(notification.entry[0]?.id).toBe('4455');
      expect(notification.entry[0]?.changes[0]?.value.contacts).toEqual([
        { profile: { name: '' }, wa_id: CUSTOMER, user_id: expect.stringMatching(BSUID) },
      ]);
    });

    it('gives a user one BSUID per business, omits the number of one with a username, and takes sends to it', async () => {
      expect((await registerOverride(`${receiver.url}/hooks/meta`)).status).toBe(200);
      const inbound = (body: Record<string, unknown>) =>
        control('/inbound', { channel: 'chat-official', account: PHONE_ID, app_secret: APP_SECRET, ...body });
      await inbound({ from: CUSTOMER, text: 'com número' });
      await inbound({ from: CUSTOMER, name: 'Ana', username: 'ana.compras', text: 'com username' });
      const [first, second] = receiver
        .posts()
        .map((post) => (JSON.parse(post.rawBody) as Notification).entry[0]!.changes[0]!.value);
      const userId = (first!.contacts as Array<{ user_id: string }>)[0]!.user_id;
      expect(userId).toMatch(/^BR\.\d+$/);
      expect(second!.contacts).toEqual([
        { profile: { name: 'Ana', username: 'ana.compras' }, user_id: userId },
      ]);
      expect(second!.messages).toEqual([
        expect.objectContaining({ from_user_id: userId, type: 'text', text: { body: 'com username' } }),
      ]);
      expect((second!.messages as unknown[])[0]).not.toHaveProperty('from');
      // A send to the BSUID reaches the number behind it, inside the window it opened.
      const { to: _to, ...byUserId } = textMessage();
      const sent = await send({ ...byUserId, recipient: userId });
      expect(sent.status).toBe(200);
      const sentBody = (await sent.json()) as { messages: Array<{ id: string }> };
      expect(sentBody).toMatchObject({ contacts: [{ input: userId, user_id: userId }] });
      const unknown = await send({ ...byUserId, recipient: 'BR.1234567890123456789' });
      expect(unknown.status).toBe(400);
      // Its statuses name the user by the BSUID, not by the number it hides.
      const { messages } = sentBody;
      await control('/status', {
        channel: 'chat-official',
        account: PHONE_ID,
        app_secret: APP_SECRET,
        message_id: messages[0]!.id,
        status: 'delivered',
      });
      const status = (JSON.parse(receiver.posts().at(-1)!.rawBody) as Notification).entry[0]!.changes[0]!
        .value.statuses as Array<Record<string, unknown>>;
      expect(status[0]).toMatchObject({ status: 'delivered', recipient_user_id: userId });
      expect(status[0]).not.toHaveProperty('recipient_id');
    });

    it("names a Brazilian mobile by WhatsApp's id, without its ninth digit, and sends to either form", async () => {
      expect((await registerOverride(`${receiver.url}/hooks/meta`)).status).toBe(200);
      await control('/inbound', {
        channel: 'chat-official',
        account: PHONE_ID,
        app_secret: APP_SECRET,
        from: '5531988887777',
        text: 'oi',
      });
      const value = (JSON.parse(receiver.posts()[0]!.rawBody) as Notification).entry[0]!.changes[0]!.value;
      expect(value.contacts).toEqual([expect.objectContaining({ wa_id: '553188887777' })]);
      expect(value.messages).toEqual([expect.objectContaining({ from: '553188887777' })]);
      // Free text to the number as written is inside the window the message opened.
      const answer = await send(textMessage('5531988887777'));
      expect(answer.status).toBe(200);
      expect((await answer.json()) as Record<string, unknown>).toMatchObject({
        contacts: [{ input: '5531988887777', wa_id: '553188887777' }],
      });
    });

    it("names a Mexican mobile by WhatsApp's id, with the 1 after +52, and sends to either form", async () => {
      expect((await registerOverride(`${receiver.url}/hooks/meta`)).status).toBe(200);
      await control('/inbound', {
        channel: 'chat-official',
        account: PHONE_ID,
        app_secret: APP_SECRET,
        from: '525512345678',
        text: 'hola',
      });
      const value = (JSON.parse(receiver.posts()[0]!.rawBody) as Notification).entry[0]!.changes[0]!.value;
      expect(value.contacts).toEqual([expect.objectContaining({ wa_id: '5215512345678' })]);
      expect(value.messages).toEqual([expect.objectContaining({ from: '5215512345678' })]);
      const inWindow: string[] = [];
      for (const to of ['525512345678', '+5215512345678']) {
        const answer = await send(textMessage(to));
        expect(answer.status).toBe(200);
        const body = (await answer.json()) as SendAnswer & Record<string, unknown>;
        expect(body).toMatchObject({ contacts: [{ input: to, wa_id: '5215512345678' }] });
        inWindow.push(body.messages[0]!.id);
      }
      // Inside the window the message opened, whichever form was written: only a send to a number that
      // never wrote fails later (131047).
      const outside = ((await (await send(textMessage('5511900000000'))).json()) as SendAnswer).messages[0]!
        .id;
      const failed = () =>
        receiver
          .posts()
          .flatMap(
            (post) => (JSON.parse(post.rawBody) as Notification).entry[0]!.changes[0]!.value.statuses ?? [],
          )
          .filter((status) => (status as { status: string }).status === 'failed')
          .map((status) => (status as { id: string }).id);
      await waitFor(() => failed().includes(outside), { what: 'the failed status of the send outside' });
      expect(failed()).toEqual([outside]);
    });

    it('answers 409 without a registered callback and 400 while it was never given an app_secret', async () => {
      const noHook = await control('/inbound', {
        channel: 'chat-official',
        account: 'phone-without-callback',
        from: CUSTOMER,
        text: 'oi',
        app_secret: APP_SECRET,
      });
      expect(noHook.status).toBe(409);
      expect(await noHook.json()).toEqual({
        error: 'no webhook registered for chat-official account phone-without-callback',
      });

      await registerOverride(`${receiver.url}/hooks/meta`);
      const noSecret = await control('/inbound', {
        channel: 'chat-official',
        account: PHONE_ID,
        from: CUSTOMER,
        text: 'oi',
      });
      expect(noSecret.status).toBe(400);
      expect(((await noSecret.json()) as { error: string }).error).toContain('app_secret');
      expect(receiver.posts()).toEqual([]);
    });

    it('signs with the first app_secret given for the number, unless a control signs with another', async () => {
      await registerOverride(`${receiver.url}/hooks/meta`);
      const inbound = (body: Record<string, unknown>) =>
        control('/inbound', {
          channel: 'chat-official',
          account: PHONE_ID,
          from: CUSTOMER,
          text: 'oi',
          ...body,
        });
      expect((await inbound({ app_secret: APP_SECRET })).status).toBe(200);
      expect((await inbound({})).status).toBe(200);
      expect((await inbound({ app_secret: 'forged' })).status).toBe(200);
      const [first, second, forged] = receiver.posts();
      expect(first && signatureIsValid(first, APP_SECRET)).toBe(true);
      expect(second && signatureIsValid(second, APP_SECRET)).toBe(true);
      expect(forged && signatureIsValid(forged, 'forged')).toBe(true);
    });

    it('escapes non-ASCII characters and slashes as Meta does, and signs those exact bytes', async () => {
      await registerOverride(`${receiver.url}/hooks/meta`);
      const res = await control('/inbound', {
        channel: 'chat-official',
        account: PHONE_ID,
        from: CUSTOMER,
        name: 'João Ação',
        text: 'Olá! Preço 1/2 😀',
        app_secret: APP_SECRET,
      });
      expect(res.status).toBe(200);
      const [webhook] = receiver.posts();
      if (!webhook) throw new Error('no webhook');
      // Only ASCII on the wire: lowercase \\uXXXX escapes (an emoji is two), and \\/ for a slash.
      expect(/^[\x20-\x7e]*$/.test(webhook.rawBody)).toBe(true);
      expect(webhook.rawBody).toContain('"name":"Jo\\u00e3o A\\u00e7\\u00e3o"');
      expect(webhook.rawBody).toContain('"body":"Ol\\u00e1! Pre\\u00e7o 1\\/2 \\ud83d\\ude00"');
      expect(signatureIsValid(webhook, APP_SECRET)).toBe(true);
      // A receiver that verified the parsed and re-serialised body would refuse Meta's notification.
      const reserialised = JSON.stringify(JSON.parse(webhook.rawBody));
      expect(reserialised).not.toBe(webhook.rawBody);
      expect(signatureIsValid({ ...webhook, rawBody: reserialised }, APP_SECRET)).toBe(false);
      const message = (JSON.parse(webhook.rawBody) as Notification).entry[0]?.changes[0]?.value
        .messages as Array<{ text: { body: string } }>;
      expect(message[0]?.text.body).toBe('Olá! Preço 1/2 😀');
    });
  });

  describe('status updates', () => {
    async function sendTemplate(): Promise<string> {
      await registerTemplate({ name: 'hello', body: 'Oi' });
      const answer = (await (await send(promoSend([], CUSTOMER, 'hello'))).json()) as SendAnswer;
      return answer.messages[0]?.id ?? '';
    }

    it.each(['sent', 'delivered', 'read'] as const)(
      'posts a signed %s status for an issued wamid',
      async (status) => {
        await registerOverride(`${receiver.url}/hooks/meta`);
        const wamid = await sendTemplate();

        const res = await control('/status', {
          channel: 'chat-official',
          account: PHONE_ID,
          message_id: wamid,
          status,
          app_secret: APP_SECRET,
        });
        expect(res.status).toBe(200);
        expect(await res.json()).toEqual({ ok: true, delivered_status: 200 });

        const [webhook] = receiver.posts();
        expect(webhook && signatureIsValid(webhook, APP_SECRET)).toBe(true);
        expect(JSON.parse(webhook?.rawBody ?? '')).toEqual({
          object: 'whatsapp_business_account',
          entry: [
            {
              id: `waba-${PHONE_ID}`,
              changes: [
                {
                  field: 'messages',
                  value: {
                    messaging_product: 'whatsapp',
                    metadata: { display_phone_number: PHONE_ID, phone_number_id: PHONE_ID },
                    statuses: [
                      {
                        id: wamid,
                        status,
                        timestamp: expect.stringMatching(/^\d+$/),
                        recipient_id: CUSTOMER,
                      },
                    ],
                  },
                },
              ],
            },
          ],
        });
      },
    );

    it('adds the undeliverable error to a failed status', async () => {
      await registerOverride(`${receiver.url}/hooks/meta`);
      const wamid = await sendTemplate();
      await control('/status', {
        channel: 'chat-official',
        account: PHONE_ID,
        message_id: wamid,
        status: 'failed',
        app_secret: APP_SECRET,
      });
      const notification = JSON.parse(receiver.posts()[0]?.rawBody ?? '') as Notification;
      expect(notification.entry[0]?.changes[0]?.value.statuses).toEqual([
        {
          id: wamid,
          status: 'failed',
          timestamp: expect.stringMatching(/^\d+$/),
          recipient_id: CUSTOMER,
          errors: [
            {
              code: 131026,
              title: 'Message undeliverable',
              message: 'Message undeliverable',
              error_data: { details: expect.stringContaining('Unable to deliver message') },
              href: 'https://developers.facebook.com/docs/whatsapp/cloud-api/support/error-codes/',
            },
          ],
        },
      ]);
    });

    it('names the error_code a failed status is given, and refuses one it does not know', async () => {
      await registerOverride(`${receiver.url}/hooks/meta`);
      const wamid = await sendTemplate();
      const status = (code: number) =>
        control('/status', {
          channel: 'chat-official',
          account: PHONE_ID,
          message_id: wamid,
          status: 'failed',
          error_code: code,
          app_secret: APP_SECRET,
        });
      expect((await status(131053)).status).toBe(200);
      const notification = JSON.parse(receiver.posts()[0]?.rawBody ?? '') as Notification;
      expect(notification.entry[0]?.changes[0]?.value.statuses).toMatchObject([
        { errors: [{ code: 131053, title: 'Media upload error' }] },
      ]);
      expect((await status(999)).status).toBe(400);
    });

    it('answers 404 for a message id the sandbox never issued, or issued for another phone', async () => {
      await registerOverride(`${receiver.url}/hooks/meta`);
      const wamid = await sendTemplate();
      for (const [account, messageId] of [
        [PHONE_ID, 'wamid.never-issued'],
        ['another-phone', wamid],
      ]) {
        const res = await control('/status', {
          channel: 'chat-official',
          account,
          message_id: messageId,
          status: 'delivered',
          app_secret: APP_SECRET,
        });
        expect(res.status).toBe(404);
      }
      expect(receiver.posts()).toEqual([]);
    });

    it('answers 409 without a callback, and 400 for a bad status', async () => {
      const wamid = await sendTemplate();
      const status = (body: Record<string, unknown>) =>
        control('/status', {
          channel: 'chat-official',
          account: PHONE_ID,
          message_id: wamid,
          app_secret: APP_SECRET,
          ...body,
        });
      expect((await status({ status: 'delivered' })).status).toBe(409);
      expect((await status({ status: 'bounced' })).status).toBe(400);
      // alt-a and alt-b report statuses too (their own tests); a wamid is not one of their ids.
      for (const channel of ['alt-a', 'alt-b']) {
        expect((await status({ channel, status: 'delivered' })).status).toBe(404);
      }
    });
  });

  describe('subscription and callback override', () => {
    it("refuses a phone number's override until the app is subscribed to the number's WABA", async () => {
      const error = await expectGraphError(
        await overridePhone(`${receiver.url}/hooks/meta`),
        400,
        100,
        '(#100) Before override the current callback uri, your app must be subscribed to receive messages for WhatsApp Business Account',
      );
      expect(error.error_data.details).toContain(`waba-${PHONE_ID}`);
      // Refused before any handshake.
      expect(receiver.calls).toEqual([]);

      // Subscribing another WABA does not help; the number's own does.
      expect((await subscribe('waba-someone-else')).status).toBe(200);
      expect((await overridePhone(`${receiver.url}/hooks/meta`)).status).toBe(400);
      expect(await (await subscribe()).json()).toEqual({ success: true });
      expect((await overridePhone(`${receiver.url}/hooks/meta`)).status).toBe(200);
    });

    it('lists the subscribed app, with a WABA-wide callback verified by handshake, until unsubscribed', async () => {
      const listed = async () =>
        (await fetch(`${base}/chat-official/v21.0/waba-${PHONE_ID}/subscribed_apps`, {
          headers: { authorization: `Bearer ${TOKEN}` },
        }).then((res) => res.json())) as { data: Array<Record<string, unknown>> };
      expect(await listed()).toEqual({ data: [] });

      const withOverride = await subscribe(`waba-${PHONE_ID}`, {
        override_callback_uri: `${receiver.url}/waba-hooks`,
        verify_token: 'waba-token',
      });
      expect(withOverride.status).toBe(200);
      expect(receiver.calls[0]?.url).toContain('hub.verify_token=waba-token');
      expect(await listed()).toEqual({
        data: [
          {
            whatsapp_business_api_data: {
              id: expect.any(String),
              link: expect.any(String),
              name: expect.any(String),
            },
            override_callback_uri: `${receiver.url}/waba-hooks`,
          },
        ],
      });
      // Without a phone number override, the WABA's callback gets the number's notifications.
      const inbound = () =>
        control('/inbound', {
          channel: 'chat-official',
          account: PHONE_ID,
          from: CUSTOMER,
          text: 'oi',
          app_secret: APP_SECRET,
        });
      expect((await inbound()).status).toBe(200);
      expect(receiver.posts()[0]?.url).toBe('/waba-hooks');

      const unsubscribed = await fetch(`${base}/chat-official/v21.0/waba-${PHONE_ID}/subscribed_apps`, {
        method: 'DELETE',
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      expect(unsubscribed.status).toBe(200);
      expect(await listed()).toEqual({ data: [] });
      // Not subscribed: Meta sends the WABA's webhooks nowhere.
      expect((await inbound()).status).toBe(409);
    });

    it("deletes the phone number's override with an empty URI, falling back to the WABA's", async () => {
      await subscribe(`waba-${PHONE_ID}`, {
        override_callback_uri: `${receiver.url}/waba-hooks`,
        verify_token: 'w',
      });
      expect((await overridePhone(`${receiver.url}/phone-hooks`)).status).toBe(200);
      const removed = await postJson(
        `${base}/chat-official/v21.0/${PHONE_ID}`,
        { webhook_configuration: { override_callback_uri: '' } },
        { authorization: `Bearer ${TOKEN}` },
      );
      expect(await removed.json()).toEqual({ success: true });
      await control('/inbound', {
        channel: 'chat-official',
        account: PHONE_ID,
        from: CUSTOMER,
        text: 'oi',
        app_secret: APP_SECRET,
      });
      expect(receiver.posts()[0]?.url).toBe('/waba-hooks');
    });

    it('refuses a callback URL over 200 characters with 100, before any handshake', async () => {
      await subscribe();
      const long = `${receiver.url}/${'a'.repeat(200)}`;
      const error = await expectGraphError(await overridePhone(long), 400, 100, '(#100) Invalid parameter');
      expect(error.error_data.details).toContain('at most 200 characters');
      const fits = `${receiver.url}/${'a'.repeat(200 - receiver.url.length - 1)}`;
      expect(fits).toHaveLength(200);
      expect((await overridePhone(fits)).status).toBe(200);
      expect(receiver.calls.filter((call) => call.method === 'GET')).toHaveLength(1);
    });
  });

  describe('batches and redelivery', () => {
    it('posts several changes in one signed notification and opens the window of each sender', async () => {
      await registerOverride(`${receiver.url}/hooks/meta`);
      await registerTemplate({ name: 'hello', body: 'Oi' });
      const wamid = ((await (await send(promoSend([], CUSTOMER, 'hello'))).json()) as SendAnswer).messages[0]
        ?.id;
      const res = await control('/chat-official/notifications', {
        account: PHONE_ID,
        app_secret: APP_SECRET,
        messages: [
          { from: '5511999990001', name: 'Ana', text: 'primeira' },
          { from: '5511999990002', text: 'segunda' },
        ],
        statuses: [{ message_id: wamid, status: 'failed', error_code: 131047 }],
      });
      expect(res.status).toBe(200);
      const answer = (await res.json()) as { delivered_status: number; provider_message_ids: string[] };
      expect(answer.delivered_status).toBe(200);
      expect(answer.provider_message_ids).toEqual([
        expect.stringMatching(WAMID),
        expect.stringMatching(WAMID),
      ]);

      expect(receiver.posts()).toHaveLength(1);
      const [webhook] = receiver.posts();
      if (!webhook) throw new Error('no webhook');
      expect(signatureIsValid(webhook, APP_SECRET)).toBe(true);
      const changes = (JSON.parse(webhook.rawBody) as Notification).entry[0]?.changes ?? [];
      expect(changes.map((change) => change.field)).toEqual(['messages', 'messages', 'messages']);
      expect(changes.map((change) => Object.keys(change.value).sort())).toEqual([
        ['contacts', 'messages', 'messaging_product', 'metadata'],
        ['contacts', 'messages', 'messaging_product', 'metadata'],
        ['messaging_product', 'metadata', 'statuses'],
      ]);
      expect(changes[2]?.value.statuses).toMatchObject([{ id: wamid, errors: [{ code: 131047 }] }]);
      // Both senders wrote: free text to them is delivered, not failed later.
      expect((await send(textMessage('5511999990001'))).status).toBe(200);
      expect((await send(textMessage('5511999990002'))).status).toBe(200);
      await sandbox.idle();
      expect(receiver.posts()).toHaveLength(1);
    });

    it('posts the last notification again, byte for byte, as Meta redelivers', async () => {
      await registerOverride(`${receiver.url}/hooks/meta`);
      await control('/inbound', {
        channel: 'chat-official',
        account: PHONE_ID,
        from: CUSTOMER,
        text: 'oi',
        app_secret: APP_SECRET,
      });
      const again = await control('/chat-official/redeliver', { account: PHONE_ID });
      expect(await again.json()).toEqual({ ok: true, delivered_status: 200 });
      const [first, second] = receiver.posts();
      expect(second?.rawBody).toBe(first?.rawBody);
      expect(second?.headers['x-hub-signature-256']).toBe(first?.headers['x-hub-signature-256']);
    });

    it('refuses what it cannot post: no callback, a foreign message id, nothing to post or redeliver', async () => {
      const nowhere = await control('/chat-official/notifications', {
        account: PHONE_ID,
        app_secret: APP_SECRET,
        messages: [{ from: CUSTOMER, text: 'oi' }],
      });
      expect(nowhere.status).toBe(409);
      await registerOverride(`${receiver.url}/hooks/meta`);
      const foreign = await control('/chat-official/notifications', {
        account: PHONE_ID,
        app_secret: APP_SECRET,
        statuses: [{ message_id: 'wamid.never', status: 'read' }],
      });
      expect(foreign.status).toBe(404);
      expect(
        (await control('/chat-official/notifications', { account: PHONE_ID, app_secret: APP_SECRET })).status,
      ).toBe(400);
      expect((await control('/chat-official/redeliver', { account: PHONE_ID })).status).toBe(409);
      expect(receiver.posts()).toEqual([]);
    });
  });

  describe('tokens and throttling', () => {
    it('answers an expired token with 190 (subcode 463) on every call, until it is valid again', async () => {
      await setWindow(CUSTOMER, new Date());
      expect((await send(textMessage())).status).toBe(200);
      expect((await control('/chat-official/token', { account: PHONE_ID, state: 'expired' })).status).toBe(
        200,
      );

      const expired =
        /^Error validating access token: Session has expired on \w+, \d+-\w+-\d\d [\d:]+ UTC\. The current time is /;
      await expectGraphError(await send(textMessage()), 401, 190, expired, 463);
      await expectGraphError(await listTemplates(`waba-${PHONE_ID}`), 401, 190, expired, 463);
      await expectGraphError(await subscribe(), 401, 190, expired, 463);
      expect(await sent()).toHaveLength(1);

      await control('/chat-official/token', { account: PHONE_ID, state: 'logged_out' });
      await expectGraphError(
        await send(textMessage()),
        401,
        190,
        'Error validating access token: The session is invalid because the user logged out.',
        467,
      );
      await control('/chat-official/token', { account: PHONE_ID, state: 'valid' });
      expect((await send(textMessage())).status).toBe(200);
    });

    it('answers 409 for a token control on a number no token was used for yet', async () => {
      const res = await control('/chat-official/token', { account: 'never-called', state: 'expired' });
      expect(res.status).toBe(409);
    });

    it('answers the next sends with the throughput limit 130429, as many times as told', async () => {
      await setWindow(CUSTOMER, new Date());
      await control('/chat-official/throttle', { account: PHONE_ID, code: 130429, times: 2 });
      for (let i = 0; i < 2; i++) {
        const error = await expectGraphError(
          await send(textMessage()),
          400,
          130429,
          '(#130429) Rate limit hit',
          2494055,
        );
        expect(error.error_data.details).toBe('Cloud API message throughput has been reached.');
      }
      expect((await send(textMessage())).status).toBe(200);
      expect(await sent()).toHaveLength(1);
    });

    it('answers the pair rate limit 131056 for one recipient only', async () => {
      await setWindow(CUSTOMER, new Date());
      await setWindow('5511999990009', new Date());
      await control('/chat-official/throttle', { account: PHONE_ID, code: 131056, to: '+55 11 99999-0000' });
      expect((await send(textMessage('5511999990009'))).status).toBe(200);
      await expectGraphError(
        await send(textMessage()),
        400,
        131056,
        '(#131056) (Business, Consumer) pair rate limit hit',
      );
      expect((await send(textMessage())).status).toBe(200);
    });

    it('refuses a throttle it does not know', async () => {
      expect((await control('/chat-official/throttle', { account: PHONE_ID, code: 4 })).status).toBe(400);
      expect(
        (await control('/chat-official/throttle', { account: PHONE_ID, code: 130429, times: 0 })).status,
      ).toBe(400);
    });
  });

  describe('late media failure', () => {
    let media: Server;
    let mediaUrl = '';
    beforeAll(async () => {
      media = createServer((req, res) => {
        if (req.url === '/banner.png') res.writeHead(200, { 'content-type': 'image/png' }).end('png');
        else if (req.url === '/page.png') res.writeHead(200, { 'content-type': 'text/html' }).end('<html>');
        else res.writeHead(404).end();
      });
      await new Promise<void>((resolve) => media.listen(0, '127.0.0.1', resolve));
      mediaUrl = `http://127.0.0.1:${(media.address() as AddressInfo).port}`;
    });
    afterAll(() => close(media));

    it.each([
      ['answers 404', '/missing.png', 'HTTP 404'],
      ['is not an image', '/page.png', 'content type text/html is not image'],
    ])(
      'accepts a template whose header link %s, then fails it with a 131053 status',
      async (_case, path, reason) => {
        await registerOverride(`${receiver.url}/hooks/meta`);
        await control('/chat-official/app-secret', { account: PHONE_ID, app_secret: APP_SECRET });
        await registerTemplate(PROMO);
        const res = await send(
          promoSend([imageHeader(`${mediaUrl}${path}`), bodyParams('Ana', 'A-1'), urlButton]),
        );
        expect(res.status).toBe(200);
        const wamid = ((await res.json()) as SendAnswer).messages[0]?.id;
        const failure = await waitFor(() => receiver.posts()[0], { what: 'the failed status notification' });
        expect(
          (JSON.parse(failure.rawBody) as Notification).entry[0]?.changes[0]?.value.statuses,
        ).toMatchObject([
          {
            id: wamid,
            status: 'failed',
            errors: [
              {
                code: 131053,
                title: 'Media upload error',
                error_data: { details: expect.stringContaining(reason) },
              },
            ],
          },
        ]);
      },
    );

    it('delivers a template whose header link serves the media', async () => {
      await registerOverride(`${receiver.url}/hooks/meta`);
      await control('/chat-official/app-secret', { account: PHONE_ID, app_secret: APP_SECRET });
      await registerTemplate(PROMO);
      const res = await send(promoSend([imageHeader(`${mediaUrl}/banner.png`), bodyParams('Ana', 'A-1')]));
      expect(res.status).toBe(200);
      await sandbox.idle();
      expect(receiver.posts()).toEqual([]);
    });
  });

  describe('windows control', () => {
    it('refuses an invalid body with 400', async () => {
      for (const body of [
        { channel: 'chat-official', account: PHONE_ID, number: CUSTOMER, last_inbound_at: 'yesterday' },
        {
          channel: 'chat-official',
          account: PHONE_ID,
          number: 'abc',
          last_inbound_at: new Date().toISOString(),
        },
        {
          channel: 'nowhere',
          account: PHONE_ID,
          number: CUSTOMER,
          last_inbound_at: new Date().toISOString(),
        },
      ]) {
        const res = await control('/windows', body);
        expect(res.status).toBe(400);
      }
    });

    it('normalises the number to digits', async () => {
      expect((await setWindow('+55 11 99999-0000', new Date())).status).toBe(200);
      expect((await send(textMessage())).status).toBe(200);
    });
  });

  it('forgets templates, callbacks, windows, tokens and issued ids on reset', async () => {
    await registerTemplate({ name: 'hello', body: 'Oi' });
    await registerOverride(`${receiver.url}/hooks/meta`);
    await setWindow(CUSTOMER, new Date());
    const wamid = ((await (await send(promoSend([], CUSTOMER, 'hello'))).json()) as SendAnswer).messages[0]
      ?.id;
    await control('/faults', { channel: 'chat-official', mode: 'error' });

    const res = await control('/reset', {});
    expect(res.status).toBe(200);

    expect(await sent()).toEqual([]);
    // A new token is accepted (old one unbound) and no fault is left: the call reaches the template check.
    await expectGraphError(
      await send(promoSend([], CUSTOMER, 'hello'), 'brand-new-token'),
      404,
      132001,
      '(#132001) Template name does not exist in the translation',
    );
    expect((await send(textMessage(), 'brand-new-token')).status).toBe(200);
    const inbound = await control('/inbound', {
      channel: 'chat-official',
      account: PHONE_ID,
      from: CUSTOMER,
      text: 'oi',
      app_secret: APP_SECRET,
    });
    expect(inbound.status).toBe(409);
    const status = await control('/status', {
      channel: 'chat-official',
      account: PHONE_ID,
      message_id: wamid,
      status: 'read',
      app_secret: APP_SECRET,
    });
    expect(status.status).toBe(404);
    expect(((await (await listTemplates(`waba-${PHONE_ID}`)).json()) as { data: unknown[] }).data).toEqual(
      [],
    );
  });
});

describe('chat-official timeout fault release', () => {
  it('answers 504 with the Graph error once the hold time has passed', async () => {
    const sandbox = createSandbox({ faultHoldMs: 100 });
    const { server, url } = await listen(sandbox);
    try {
      await postJson(`${url}/_sandbox/faults`, { channel: 'chat-official', mode: 'timeout' });
      const res = await postJson(`${url}/chat-official/v21.0/${PHONE_ID}/messages`, textMessage(), {
        authorization: `Bearer ${TOKEN}`,
      });
      expect(res.status).toBe(504);
      expect(await res.json()).toMatchObject({
        error: { code: 131000, message: '(#131000) Something went wrong' },
      });
    } finally {
      await close(server);
    }
  });
});

describe('chat-official handshake transport', () => {
  it('verifies the callback through the given fetchImpl', async () => {
    const asked: string[] = [];
    const fetchImpl: typeof fetch = async (input) => {
      const url = new URL(String(input));
      asked.push(url.toString());
      return new Response(url.searchParams.get('hub.challenge'), { status: 200 });
    };
    const { server, url } = await listen(createSandbox({ fetchImpl }));
    try {
      const subscribed = await fetch(`${url}/chat-official/v21.0/waba-${PHONE_ID}/subscribed_apps`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      expect(subscribed.status).toBe(200);
      const res = await postJson(
        `${url}/chat-official/v21.0/${PHONE_ID}`,
        {
          webhook_configuration: { override_callback_uri: 'https://connector.test/meta', verify_token: 't' },
        },
        { authorization: `Bearer ${TOKEN}` },
      );
      expect(res.status).toBe(200);
      expect(asked).toHaveLength(1);
      expect(asked[0]).toMatch(
        /^https:\/\/connector\.test\/meta\?hub\.mode=subscribe&hub\.verify_token=t&hub\.challenge=\d+$/,
      );
    } finally {
      await close(server);
    }
  });
});

describe('chat-official callback URLs, as Meta takes them', () => {
  it('refuses an http callback, takes https, and refuses one over 200 characters', async () => {
    const asked: string[] = [];
    const fetchImpl: typeof fetch = async (input) => {
      const url = new URL(String(input));
      asked.push(url.toString());
      return new Response(url.searchParams.get('hub.challenge'), { status: 200 });
    };
    const { server, url } = await listen(createSandbox({ fetchImpl }));
    const override = (callback: string) =>
      postJson(
        `${url}/chat-official/v21.0/${PHONE_ID}`,
        { webhook_configuration: { override_callback_uri: callback, verify_token: 't' } },
        { authorization: `Bearer ${TOKEN}` },
      );
    try {
      await fetch(`${url}/chat-official/v21.0/waba-${PHONE_ID}/subscribed_apps`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      const http = await override('http://connector.test/inbound/chat-official/1');
      expect(http.status).toBe(400);
      expect(await http.json()).toMatchObject({
        error: {
          code: 100,
          message: '(#100) Invalid parameter',
          error_data: { details: 'override_callback_uri must be an https URL of at most 200 characters' },
        },
      });
      const tooLong = await override(`https://connector.test/${'x'.repeat(180)}`);
      expect(tooLong.status).toBe(400);
      expect(asked).toEqual([]);
      expect((await override('https://connector.test/inbound/chat-official/1')).status).toBe(200);
      expect(asked).toHaveLength(1);
    } finally {
      await close(server);
    }
  });
});
