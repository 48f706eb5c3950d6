import { describe, expect, it } from 'vitest';
import { ALT_A_CALLBACK_HEADER, altAAdapter } from './alt-a.js';
import { InboundRejected } from './channel-adapter.js';

// Callback bodies as Evolution API v2 (2.3.x) posts them: the envelope of channel.service.ts
// `sendDataWebhook` around `prepareMessage`'s data (whatsapp.baileys.service.ts), as issues #1764 and
// #2466 of the project show them in the wild. Defaults included: `apikey: null` (unless
// AUTHENTICATION_EXPOSE_IN_FETCH_INSTANCES=true) and `pushName: null` for a sender without a name.
const INSTANCE = 'Whatsapp';
const SECRET = 'the-callback-secret';
const config = { base_url: 'https://evo.example', instance: INSTANCE, api_key: 'k', callback_secret: SECRET };

const envelope = (event: string, data: unknown) => ({
  event,
  instance: INSTANCE,
  data,
  destination: 'https://connector.example/inbound/alt-a/x',
  date_time: '2025-07-27T08:14:17.123Z',
  sender: '5511900000000@s.whatsapp.net',
  server_url: 'http://localhost:8080',
  apikey: null,
});

const upsert = (key: object, extra: object = {}) =>
  envelope('messages.upsert', {
    key: { remoteJid: '5511933330001@s.whatsapp.net', fromMe: false, id: '3A4F2B9C1D0E8F7A6B5C', ...key },
    pushName: 'Helô Lucarello',
    status: 'DELIVERY_ACK',
    message: {
      conversation: 'Vou pensar e retorno. Muito obrigada por enquanto!',
      messageContextInfo: { deviceListMetadataVersion: 2, messageSecret: 'c2VjcmV0' },
    },
    messageType: 'conversation',
    messageTimestamp: 1753614857,
    instanceId: 'bae4a8f1-6d2c-4c8e-9f0a-1b2c3d4e5f60',
    source: 'android',
    ...extra,
  });

const update = (status: string, fromMe = true) =>
  envelope('messages.update', {
    keyId: '3EB0C431C26A1916E0CB2A',
    remoteJid: '5511933330001@s.whatsapp.net',
    fromMe,
    status,
    instanceId: 'bae4a8f1-6d2c-4c8e-9f0a-1b2c3d4e5f60',
    messageId: 'cm3x0k2ab0001qz8l4v7d9e2f',
  });

const callback = (body: unknown, secret: string | null = SECRET) => ({
  headers: {
    'content-type': 'application/json',
    'user-agent': 'axios/1.7.9',
    ...(secret === null ? {} : { [ALT_A_CALLBACK_HEADER]: secret }),
  },
  rawBody: Buffer.from(JSON.stringify(body)),
});
const read = (body: unknown) => altAAdapter.readInbound(config, callback(body));

describe('alt-a (Evolution API v2) callbacks', () => {
  it('takes messages.upsert with `apikey: null`, by the secret header set on the webhook', () => {
    expect(read(upsert({}))).toEqual({
      messages: [
        {
          providerMessageId: '3A4F2B9C1D0E8F7A6B5C',
          from: '5511933330001',
          name: 'Helô Lucarello',
          text: 'Vou pensar e retorno. Muito obrigada por enquanto!',
          type: 'text',
          sentAt: new Date(1753614857 * 1000),
        },
      ],
      statuses: [],
    });
  });

  it('accepts `pushName: null`', () => {
    const [message] = read(upsert({}, { pushName: null })).messages;
    expect(message).toMatchObject({ from: '5511933330001', name: null });
  });

  it('refuses a callback without the header, with another secret, or naming another instance', () => {
    for (const secret of [null, 'wrong', '']) {
      expect(() => altAAdapter.readInbound(config, callback(upsert({}), secret))).toThrow(InboundRejected);
    }
    // The body's apikey, even when exposed and right, is not what proves a callback.
    const exposed = { ...upsert({}), apikey: 'k' };
    expect(() => altAAdapter.readInbound(config, callback(exposed, null))).toThrow(InboundRejected);
    expect(() => read({ ...upsert({}), instance: 'other' })).toThrow(InboundRejected);
    const { callback_secret: _, ...withoutSecret } = config;
    expect(() => altAAdapter.readInbound(withoutSecret, callback(upsert({})))).toThrow(InboundRejected);
  });

  it('takes the number from remoteJidAlt under LID addressing', () => {
    const lid = upsert({
      remoteJid: '103899771998284@lid',
      remoteJidAlt: '5511933330001@s.whatsapp.net',
      addressingMode: 'lid',
    });
    expect(read(lid).messages[0]).toMatchObject({
      from: '5511933330001',
      providerMessageId: '3A4F2B9C1D0E8F7A6B5C',
    });
    // 2.4.0's release candidates put the number first and the LID second.
    const swapped = upsert({ remoteJidAlt: '103899771998284@lid', addressingMode: 'lid' });
    expect(read(swapped).messages[0]?.from).toBe('5511933330001');
    // 2.3.7 writes the number over the LID: both name the number.
    const overwritten = upsert({ remoteJidAlt: '5511933330001@s.whatsapp.net', addressingMode: 'lid' });
    expect(read(overwritten).messages[0]).toMatchObject({ from: '5511933330001', name: 'Helô Lucarello' });
  });

  it('notes the LID beside the number, so that a message naming the LID alone reaches the same contact', () => {
    // Under LID addressing the LID first and the number in remoteJidAlt, under PN addressing the reverse.
    for (const key of [
      {
        remoteJid: '103899771998284@lid',
        remoteJidAlt: '5511933330001@s.whatsapp.net',
        addressingMode: 'lid',
      },
      { remoteJidAlt: '103899771998284@lid', addressingMode: 'pn' },
    ])
      expect(read(upsert(key)).messages[0]).toMatchObject({
        from: '5511933330001',
        userId: '103899771998284@lid',
      });
    // The number alone: nothing beside it; the LID alone: the contact keyed by it, as the note names it.
    expect(read(upsert({})).messages[0]).not.toHaveProperty('userId');
    const alone = read(upsert({ remoteJid: '103899771998284@lid', addressingMode: 'lid' })).messages[0];
    expect(alone).toMatchObject({ from: '103899771998284@lid', keyedBy: 'user_id' });
    expect(alone).not.toHaveProperty('userId');
  });

  it('takes the number from senderPn under LID addressing on Evolution 2.2 to 2.3.0', () => {
    const older = upsert({
      remoteJid: '103899771998284@lid',
      senderPn: '5511933330001@s.whatsapp.net',
    });
    expect(read(older).messages[0]).toMatchObject({ from: '5511933330001' });
  });

  it('never makes a LID into a phone: a LID chat without remoteJidAlt or senderPn is keyed by the LID', () => {
    expect(read(upsert({ remoteJid: '103899771998284@lid', addressingMode: 'lid' })).messages).toEqual([
      expect.objectContaining({ from: '103899771998284@lid', keyedBy: 'user_id', name: 'Helô Lucarello' }),
    ]);
    // Neither a number nor a LID: reported, not taken in.
    expect(read(upsert({ remoteJid: '13718@lid' }))).toEqual({
      messages: [],
      statuses: [],
      unreadable: [
        {
          providerMessageId: '3A4F2B9C1D0E8F7A6B5C',
          reason: 'alt-a chat names neither a phone number nor a LID',
        },
      ],
    });
  });

  it.each([
    [
      'a group message (sender in key.participant)',
      upsert(
        { remoteJid: '120363025246125486@g.us', participant: '5511933330001@s.whatsapp.net' },
        { pushName: '5511933330001' },
      ),
    ],
    ['a status post', upsert({ remoteJid: 'status@broadcast', participant: '5511933330001@s.whatsapp.net' })],
    ['a channel post', upsert({ remoteJid: '120363222222222222@newsletter' })],
    ['our own message', upsert({ fromMe: true }, { pushName: 'Você' })],
  ])('ignores %s', (_what, body) => {
    expect(read(body)).toEqual({ messages: [], statuses: [] });
  });

  it('reads media and folded extended text', () => {
    const image = upsert({}, { message: { imageMessage: { caption: 'nota', mimetype: 'image/jpeg' } } });
    expect(read(image).messages[0]).toMatchObject({ type: 'image', text: 'nota' });
    const extended = upsert({}, { message: { extendedTextMessage: { text: 'com link https://x' } } });
    expect(read(extended).messages[0]).toMatchObject({ type: 'text', text: 'com link https://x' });
    const reaction = upsert(
      {},
      { message: { reactionMessage: { text: '👍' } }, messageType: 'reactionMessage' },
    );
    expect(read(reaction).messages[0]).toMatchObject({ type: 'others', text: '👍' });
  });

  it('reads what a disappearing or view-once envelope holds, and a button or list answer by its label', () => {
    const ephemeral = upsert(
      {},
      { message: { ephemeralMessage: { message: { extendedTextMessage: { text: 'some em 24h' } } } } },
    );
    expect(read(ephemeral).messages[0]).toMatchObject({ type: 'text', text: 'some em 24h' });
    const viewOnce = upsert(
      {},
      { message: { viewOnceMessageV2: { message: { imageMessage: { caption: 'só uma vez' } } } } },
    );
    expect(read(viewOnce).messages[0]).toMatchObject({ type: 'image', text: 'só uma vez' });
    const button = upsert({}, { message: { buttonsResponseMessage: { selectedDisplayText: 'Sim' } } });
    expect(read(button).messages[0]).toMatchObject({ type: 'text', text: 'Sim' });
    const row = upsert({}, { message: { listResponseMessage: { title: 'Segunda-feira' } } });
    expect(read(row).messages[0]).toMatchObject({ type: 'text', text: 'Segunda-feira' });
  });

  it('takes in no reaction taken back and no protocol message (a deletion, an edit)', () => {
    const takenBack = upsert({}, { message: { reactionMessage: { text: '' } } });
    expect(read(takenBack)).toEqual({ messages: [], statuses: [] });
    const deletion = upsert({}, { message: { protocolMessage: { type: 'REVOKE' } } });
    expect(read(deletion)).toEqual({ messages: [], statuses: [] });
  });

  it('reads messages.update acks of our messages: SERVER_ACK, DELIVERY_ACK, READ, PLAYED, ERROR', () => {
    const statusOf = (ack: string) => read(update(ack)).statuses;
    expect(statusOf('SERVER_ACK')).toEqual([
      { providerMessageId: '3EB0C431C26A1916E0CB2A', status: 'sent', error: null },
    ]);
    expect(statusOf('DELIVERY_ACK')[0]?.status).toBe('delivered');
    expect(statusOf('READ')[0]?.status).toBe('read');
    expect(statusOf('PLAYED')[0]?.status).toBe('read');
    expect(statusOf('ERROR')).toEqual([
      {
        providerMessageId: '3EB0C431C26A1916E0CB2A',
        status: 'failed',
        error: 'WhatsApp reported the message as ERROR',
      },
    ]);
    expect(statusOf('PENDING')).toEqual([]);
    expect(statusOf('DELETED')).toEqual([]);
    // The contact's message being read by us is not a status of ours.
    expect(read(update('READ', false)).statuses).toEqual([]);
  });

  it('answers other events with nothing', () => {
    expect(
      read(envelope('connection.update', { instance: INSTANCE, state: 'close', statusReason: 401 })),
    ).toEqual({
      messages: [],
      statuses: [],
    });
  });
});
