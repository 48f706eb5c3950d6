import { createHmac } from 'node:crypto';
import { AppError } from '@inbox/contracts';
import { describe, expect, it } from 'vitest';
import { InboundRejected, ProviderError } from './channel-adapter.js';
import { metaMessagingFailure } from './meta-messaging.js';
import { photoAdapter } from './photo.js';
import { socialAdapter } from './social.js';

// Payloads as Meta's reference shows them (Messenger Platform, reference/webhook-events: messages,
// message-echoes, message-deliveries, message-reads, standby; Instagram messaging webhooks), serialised
// as Meta sends them: non-ASCII escaped as \uXXXX, which the signature covers.
const PAGE = '104729185532201';
const IG = '17841400000000001';
const PSID = '6543219870123456';
const social = {
  page_id: PAGE,
  page_access_token: 'EAAG-page',
  app_secret: 'app-secret-1',
  verify_token: 'verify-1',
  base_url: 'https://graph.facebook.com',
};
const photo = {
  ig_user_id: IG,
  access_token: 'IGAA-token',
  app_secret: 'app-secret-1',
  verify_token: 'verify-1',
  base_url: 'https://graph.instagram.com',
};

const escaped = (value: unknown) =>
  JSON.stringify(value).replace(
    /[\u0080-\uffff]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
function signedRequest(value: unknown, secret = 'app-secret-1') {
  const rawBody = Buffer.from(escaped(value));
  const signature = createHmac('sha256', secret).update(rawBody).digest('hex');
  return { headers: { 'x-hub-signature-256': `sha256=${signature}` }, rawBody };
}

const message = (account: string, mid: string, extra: Record<string, unknown> = {}) => ({
  sender: { id: PSID },
  recipient: { id: account },
  timestamp: 1700000000123,
  message: { mid, text: 'Olá, é sobre o pedido', ...extra },
});

describe('the Messenger adapter (social)', () => {
  it('reads a batch: messages to the Page, deliveries by mid, reads and deliveries without mids by watermark; skips echoes, standby, reactions, other Pages', () => {
    const batch = socialAdapter.readInbound(
      social,
      signedRequest({
        object: 'page',
        entry: [
          { id: PAGE, time: 1700000000200, messaging: [message(PAGE, 'm_1')] },
          {
            id: PAGE,
            time: 1700000000300,
            messaging: [
              {
                sender: { id: PAGE },
                recipient: { id: PSID },
                timestamp: 1700000000300,
                message: { mid: 'm_echo', is_echo: true, app_id: 1517776481860111, text: 'resposta' },
              },
            ],
          },
          { id: PAGE, time: 1700000000400, standby: [message(PAGE, 'm_standby')] },
          {
            id: PAGE,
            time: 1700000000500,
            messaging: [
              {
                sender: { id: PSID },
                recipient: { id: PAGE },
                timestamp: 1700000000500,
                reaction: { mid: 'm_1', action: 'react', reaction: 'love', emoji: '❤️' },
              },
            ],
          },
          { id: '999', time: 1700000000600, messaging: [message('999', 'm_other_page')] },
          {
            id: PAGE,
            time: 1700000000700,
            messaging: [
              {
                sender: { id: PSID },
                recipient: { id: PAGE },
                delivery: { mids: ['m_out_1', 'm_out_2'], watermark: 1700000000650 },
              },
              {
                sender: { id: PSID },
                recipient: { id: PAGE },
                timestamp: 1700000000800,
                read: { watermark: 1700000000650 },
              },
              {
                sender: { id: PSID },
                recipient: { id: PAGE },
                // Deliveries' mids "may not be present".
                delivery: { watermark: 1700000000640 },
              },
            ],
          },
          {
            id: PAGE,
            time: 1700000000900,
            messaging: [
              message(PAGE, 'm_2', {
                text: undefined,
                attachments: [{ type: 'image', payload: { url: 'https://scontent.xx.fbcdn.net/x.jpg' } }],
              }),
            ],
          },
        ],
      }),
    );
    expect(batch.messages).toEqual([
      {
        providerMessageId: 'm_1',
        from: PSID,
        keyedBy: 'user_id',
        name: null,
        text: 'Olá, é sobre o pedido',
        type: 'text',
        sentAt: new Date(1700000000123),
      },
      expect.objectContaining({ providerMessageId: 'm_2', text: '', type: 'image' }),
    ]);
    expect(batch.statuses.map((s) => [s.providerMessageId, s.status])).toEqual([
      ['m_out_1', 'delivered'],
      ['m_out_2', 'delivered'],
    ]);
    expect(batch.watermarks).toEqual([
      { userId: PSID, status: 'read', upTo: new Date(1700000000650) },
      { userId: PSID, status: 'delivered', upTo: new Date(1700000000640) },
    ]);
  });

  it('reads a postback as the person answering with the button title, named by its mid or by what it says', () => {
    const tap = (postback: Record<string, unknown>, timestamp = 1700000000500) => ({
      sender: { id: PSID },
      recipient: { id: PAGE },
      timestamp,
      postback,
    });
    const batch = socialAdapter.readInbound(
      social,
      signedRequest({
        object: 'page',
        entry: [
          {
            id: PAGE,
            time: 1700000000600,
            messaging: [
              tap({ mid: 'm_tap', title: 'Começar', payload: 'GET_STARTED' }),
              tap({ payload: 'MENU_PEDIDOS' }, 1700000000700),
            ],
          },
        ],
      }),
    );
    expect(batch.messages).toEqual([
      {
        providerMessageId: 'm_tap',
        from: PSID,
        keyedBy: 'user_id',
        name: null,
        text: 'Começar',
        type: 'text',
        sentAt: new Date(1700000000500),
      },
      {
        providerMessageId: expect.stringMatching(/^postback:[0-9a-f]{64}$/),
        from: PSID,
        keyedBy: 'user_id',
        name: null,
        text: '',
        type: 'others',
        sentAt: new Date(1700000000700),
      },
    ]);
    // The same event again (Meta's redelivery) has the same id; another tap has another.
    const again = (payload: string, timestamp: number) =>
      socialAdapter.readInbound(
        social,
        signedRequest({ object: 'page', entry: [{ id: PAGE, messaging: [tap({ payload }, timestamp)] }] }),
      ).messages[0]!.providerMessageId;
    expect(again('MENU_PEDIDOS', 1700000000700)).toBe(batch.messages[1]!.providerMessageId);
    expect(again('MENU_PEDIDOS', 1700000000800)).not.toBe(batch.messages[1]!.providerMessageId);
  });

  it('reads a location attachment as where the person is', () => {
    const pin = {
      type: 'location',
      title: 'Localização de Ana',
      url: 'https://l.facebook.com/l.php?u=https%3A%2F%2Fwww.bing.com%2Fmaps',
      payload: { coordinates: { lat: -23.5613, long: -46.6565 } },
    };
    const [read] = socialAdapter.readInbound(
      social,
      signedRequest({
        object: 'page',
        entry: [{ id: PAGE, messaging: [message(PAGE, 'm_pin', { text: undefined, attachments: [pin] })] }],
      }),
    ).messages;
    expect(read).toMatchObject({ type: 'location', text: 'Localização de Ana (-23.5613, -46.6565)' });
  });

  it('refuses a body not signed with the app secret, and an Instagram body', () => {
    const body = { object: 'page', entry: [{ id: PAGE, time: 1, messaging: [message(PAGE, 'm_1')] }] };
    expect(() => socialAdapter.readInbound(social, signedRequest(body, 'another-secret'))).toThrow(
      InboundRejected,
    );
    // Signed over the escaped bytes: the same JSON sent unescaped is not what Meta signed.
    const request = signedRequest(body);
    expect(() =>
      socialAdapter.readInbound(social, { ...request, rawBody: Buffer.from(JSON.stringify(body)) }),
    ).toThrow(InboundRejected);
    expect(() => socialAdapter.readInbound(social, signedRequest({ ...body, object: 'instagram' }))).toThrow(
      InboundRejected,
    );
  });

  it('answers the verification request with the challenge only for its verify token', () => {
    const query = { 'hub.mode': 'subscribe', 'hub.verify_token': 'verify-1', 'hub.challenge': '1158201444' };
    expect(socialAdapter.answerHandshake?.(social, query)).toBe('1158201444');
    expect(socialAdapter.answerHandshake?.(social, { ...query, 'hub.verify_token': 'x' })).toBeUndefined();
    expect(socialAdapter.answerHandshake?.(social, { ...query, 'hub.mode': 'unsubscribe' })).toBeUndefined();
  });

  it('maps Graph errors: 190 disconnects, throttles wait, the closed window is named', () => {
    const product = { channel: 'social', windowSubcode: 2018278, throttleCode: 80006 } as const;
    const answer = (error: Record<string, unknown>) => ({
      status: 400,
      ok: false,
      headers: {},
      body: { error: { type: 'OAuthException', fbtrace_id: 'A1', ...error } },
    });
    expect(
      metaMessagingFailure(product, 'messages', answer({ code: 190, error_subcode: 463 })),
    ).toMatchObject({
      refusal: 'credentials_rejected',
    });
    for (const code of [4, 17, 32, 613, 80006])
      expect(metaMessagingFailure(product, 'messages', answer({ code }))).toMatchObject({
        refusal: 'rate_limited',
      });
    const closed = metaMessagingFailure(
      product,
      'messages',
      answer({
        code: 10,
        error_subcode: 2018278,
        message: '(#10) This message is sent outside of allowed window.',
      }),
    );
    expect(closed).toBeInstanceOf(AppError);
    expect(closed).toMatchObject({ status: 400, body: { error: expect.stringContaining('"social"') } });
    const other = metaMessagingFailure(product, 'messages', answer({ code: 100, error_subcode: 2018001 }));
    expect(other).toBeInstanceOf(ProviderError);
    expect((other as ProviderError).refusal).toBeUndefined();
  });

  it('refuses a text over 2000 characters before calling Meta', async () => {
    await expect(
      socialAdapter.sendText(social, { to: PSID, text: 'a'.repeat(2001) }, {} as never),
    ).rejects.toMatchObject({ status: 400, body: { error: expect.stringContaining('2000 caracteres') } });
  });
});

describe('the Instagram adapter (photo)', () => {
  it('reads messages to the account and reads by mid; skips echoes and deleted messages', () => {
    const batch = photoAdapter.readInbound(
      photo,
      signedRequest({
        object: 'instagram',
        entry: [
          {
            id: IG,
            time: 1700000000200,
            messaging: [
              message(IG, 'aWdfbWVzc2FnZV9pdGVtOjE='),
              {
                sender: { id: PSID },
                recipient: { id: IG },
                timestamp: 1700000000300,
                read: { mid: 'aWdf_out' },
              },
              {
                sender: { id: IG },
                recipient: { id: PSID },
                timestamp: 1,
                message: { mid: 'aWdf_echo', is_echo: true, text: 'x' },
              },
              {
                sender: { id: PSID },
                recipient: { id: IG },
                timestamp: 1,
                message: { mid: 'aWdf_del', is_deleted: true },
              },
            ],
          },
        ],
      }),
    );
    expect(batch.messages.map((m) => [m.providerMessageId, m.from, m.keyedBy, m.text])).toEqual([
      ['aWdfbWVzc2FnZV9pdGVtOjE=', PSID, 'user_id', 'Olá, é sobre o pedido'],
    ]);
    expect(batch.statuses.map((s) => [s.providerMessageId, s.status])).toEqual([['aWdf_out', 'read']]);
  });

  it('refuses a Messenger body', () => {
    expect(() =>
      photoAdapter.readInbound(
        photo,
        signedRequest({ object: 'page', entry: [{ id: IG, time: 1, messaging: [] }] }),
      ),
    ).toThrow(InboundRejected);
  });

  it('counts its 1000-byte limit in UTF-8 bytes', async () => {
    // 600 characters, 1200 bytes.
    await expect(
      photoAdapter.sendText(photo, { to: PSID, text: 'é'.repeat(600) }, {} as never),
    ).rejects.toMatchObject({
      status: 400,
      body: { error: expect.stringContaining('1000 bytes') },
    });
  });
});
