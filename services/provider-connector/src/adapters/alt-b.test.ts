import { describe, expect, it } from 'vitest';
import { ALT_B_CALLBACK_PARAM, ALT_B_TOKEN_HEADER, altBAdapter } from './alt-b.js';
import { InboundRejected } from './channel-adapter.js';

// Callback bodies copied from Z-API's documentation (github.com/Z-API/z-api-docs,
// webhooks/on-message-received.md and on-whatsapp-message-status-changes.md; developer.z-api.io),
// with the instance id set to the integration's.
const INSTANCE = 'A20DA9C0183A2D35A260F53F5D2B9244';
const SECRET = 'the-callback-secret';
const config = {
  base_url: 'https://api.z-api.io',
  instance_id: INSTANCE,
  token: 'tok',
  callback_secret: SECRET,
};

const textReceived = {
  isStatusReply: false,
  senderLid: '81896604192873@lid',
  connectedPhone: '554499999999',
  waitingMessage: false,
  isEdit: false,
  isGroup: false,
  isNewsletter: false,
  instanceId: INSTANCE,
  messageId: 'A20DA9C0183A2D35A260F53F5D2B9244',
  phone: '5544999999999',
  fromMe: false,
  momment: 1632228638000,
  status: 'RECEIVED',
  chatName: 'name',
  senderPhoto: 'https://',
  senderName: 'name',
  participantPhone: null,
  participantLid: null,
  photo: 'https://',
  broadcast: false,
  type: 'ReceivedCallback',
  text: {
    message: 'test',
    descritpion: '(optional) if the message has a description inserted by WhatsApp',
    title: '(optional) if the message has a title inserted by WhatsApp',
  },
};

/** "Example of a group join request via an invitation link": a group's id in `phone`. */
const groupNotice = {
  isGroup: true,
  isNewsletter: false,
  instanceId: INSTANCE,
  messageId: 'A20DA9C0183A2D35A260F53F5D2B9244',
  phone: '5544999999999-group',
  connectedPhone: '5544999999999',
  fromMe: false,
  momment: 1682017970000,
  status: 'RECEIVED',
  chatName: 'name',
  senderName: 'name',
  broadcast: false,
  participantPhone: '5544999999999',
  type: 'ReceivedCallback',
  notification: 'MEMBERSHIP_APPROVAL_REQUEST',
  notificationParameters: ['5544999999999'],
  requestMethod: 'invite_link',
};

const callback = (body: unknown, token: string | null = SECRET) => ({
  headers: { 'content-type': 'application/json' },
  query: token === null ? {} : { [ALT_B_CALLBACK_PARAM]: token },
  rawBody: Buffer.from(JSON.stringify(body)),
});
const read = (body: unknown) => altBAdapter.readInbound(config, callback(body));

describe('alt-b (Z-API) callbacks', () => {
  it('takes the documented text callback, which carries no credential, by the secret in its URL', () => {
    expect(read(textReceived)).toEqual({
      messages: [
        {
          providerMessageId: 'A20DA9C0183A2D35A260F53F5D2B9244',
          from: '5544999999999',
          userId: '81896604192873@lid',
          name: 'name',
          text: 'test',
          type: 'text',
          sentAt: new Date(1632228638000),
        },
      ],
      statuses: [],
    });
  });

  it("notes the contact's LID beside its number, so that a message naming the LID alone reaches the same contact", () => {
    const first = (body: object) => read(body).messages[0];
    // The docs' example names the sender's LID in senderLid; callbacks seen in the wild, in chatLid too.
    expect(first(textReceived)).toMatchObject({ from: '5544999999999', userId: '81896604192873@lid' });
    expect(first({ ...textReceived, senderLid: null, chatLid: '81896604192874@lid' })).toMatchObject({
      userId: '81896604192874@lid',
    });
    expect(first({ ...textReceived, senderLid: 'not-a-lid' })).not.toHaveProperty('userId');
    // Named by the LID alone: keyed by it.
    const alone = first({ ...textReceived, phone: '81896604192873@lid' });
    expect(alone).toMatchObject({ from: '81896604192873@lid', keyedBy: 'user_id' });
    expect(alone).not.toHaveProperty('userId');
  });

  it('refuses a callback without the secret, with another one, or for another instance', () => {
    for (const token of [null, 'wrong', '']) {
      expect(() => altBAdapter.readInbound(config, callback(textReceived, token))).toThrow(InboundRejected);
    }
    // A header of the kind the old adapter required proves nothing.
    const withClientToken = { ...callback(textReceived, null), headers: { 'client-token': SECRET } };
    expect(() => altBAdapter.readInbound(config, withClientToken)).toThrow(InboundRejected);
    expect(() => read({ ...textReceived, instanceId: 'someone-else' })).toThrow(InboundRejected);
    // An integration stored before callback secrets existed takes no callback by its URL.
    const { callback_secret: _, ...withoutSecret } = config;
    expect(() => altBAdapter.readInbound(withoutSecret, callback(textReceived))).toThrow(InboundRejected);
    // Another token in Z-API's own header proves nothing either.
    const wrongHeader = {
      ...callback(textReceived, null),
      headers: { [ALT_B_TOKEN_HEADER]: 'not-the-token' },
    };
    expect(() => altBAdapter.readInbound(config, wrongHeader)).toThrow(InboundRejected);
  });

  it("takes a callback whose URL lost its query string by the instance's token in Z-API's header", () => {
    const headerOnly = { ...callback(textReceived, null), headers: { [ALT_B_TOKEN_HEADER]: config.token } };
    expect(altBAdapter.readInbound(config, headerOnly).messages).toHaveLength(1);
    const { callback_secret: _, ...withoutSecret } = config;
    expect(altBAdapter.readInbound(withoutSecret, headerOnly).messages).toHaveLength(1);
  });

  it.each([
    ['a group (its id in phone)', groupNotice],
    ['a group message', { ...textReceived, isGroup: true, phone: '120363019502650977-group' }],
    [
      'a channel (newsletter) notice',
      { ...textReceived, phone: '5544999999999@newsletter', notification: 'NEWSLETTER_ADMIN_PROMOTE' },
    ],
    ['a channel message', { ...textReceived, isNewsletter: true }],
    [
      'a message to a broadcast list',
      { ...textReceived, phone: '1774895799-broadcast', fromMe: true, broadcast: true },
    ],
    ['a reply to a status post', { ...textReceived, isStatusReply: true }],
    [
      'a "waiting for message" placeholder',
      { ...textReceived, fromMe: true, waitingMessage: true, text: undefined },
    ],
    ['our own message', { ...textReceived, fromMe: true }],
    [
      'a system notice in a one-to-one chat',
      { ...textReceived, text: undefined, notification: 'CALL_MISSED_VOICE' },
    ],
  ])('ignores %s: no contact, no message', (_what, body) => {
    expect(read(body)).toEqual({ messages: [], statuses: [] });
  });

  it('reads the name as absent when Z-API repeats the number there, and media with their captions', () => {
    const [noName] = read({ ...textReceived, senderName: '5544999999999', chatName: 'Test Number' }).messages;
    expect(noName?.name).toBeNull();
    const image = {
      ...textReceived,
      text: undefined,
      image: { mimeType: 'image/jpeg', imageUrl: 'https://', caption: 'foto', width: 600, height: 315 },
    };
    expect(read(image).messages[0]).toMatchObject({ type: 'image', text: 'foto' });
  });

  it("reads the docs' location, which has no name, as where the contact is", () => {
    const location = {
      ...textReceived,
      text: undefined,
      location: { longitude: -46.6565, latitude: -23.5613, address: '', url: '' },
    };
    expect(read(location).messages[0]).toMatchObject({ type: 'location', text: '-23.5613, -46.6565' });
  });

  it('reads MessageStatusCallback: SENT, RECEIVED, READ, PLAYED for every id; not READ_BY_ME', () => {
    const status = (name: string, extra: object = {}) => ({
      instanceId: INSTANCE,
      status: name,
      ids: ['999999999999999999999', '888888888888888888888'],
      momment: 1632234645000,
      phoneDevice: 0,
      phone: '5544999999999',
      type: 'MessageStatusCallback',
      isGroup: false,
      ...extra,
    });
    expect(read(status('SENT')).statuses).toEqual([
      { providerMessageId: '999999999999999999999', status: 'sent', error: null },
      { providerMessageId: '888888888888888888888', status: 'sent', error: null },
    ]);
    expect(read(status('RECEIVED')).statuses[0]?.status).toBe('delivered');
    expect(read(status('READ')).statuses[0]?.status).toBe('read');
    expect(read(status('PLAYED')).statuses[0]?.status).toBe('read');
    expect(read(status('READ_BY_ME'))).toEqual({ messages: [], statuses: [] });
    expect(read(status('READ-SELF'))).toEqual({ messages: [], statuses: [] });
    expect(read(status('READ', { isGroup: true }))).toEqual({ messages: [], statuses: [] });
    expect(() => read(status('READ', { instanceId: 'other' }))).toThrow(InboundRejected);
  });

  it("reads DeliveryCallback's error as the send failing, with its errorCode; one without error is nothing", () => {
    const sent = (extra: object = {}) => ({
      phone: '554499999999',
      messageId: 'A800FB3697F1DE58C48D',
      instanceId: INSTANCE,
      zaapId: 'A20DA9C0183A2D35A260F53F5D2B9244',
      momment: 1777494009341,
      type: 'DeliveryCallback',
      ...extra,
    });
    expect(read(sent())).toEqual({ messages: [], statuses: [] });
    expect(read(sent({ error: 'Phone number does not exist' })).statuses).toEqual([
      { providerMessageId: 'A800FB3697F1DE58C48D', status: 'failed', error: 'Phone number does not exist' },
    ]);
    expect(
      read(sent({ error: 'The message was not sent due to a likely shadow ban', errorCode: 'SHADOW_BAN' }))
        .statuses[0]?.error,
    ).toBe('SHADOW_BAN: The message was not sent due to a likely shadow ban');
    expect(() => read(sent({ error: 'x', instanceId: 'other' }))).toThrow(InboundRejected);
  });

  it('answers callbacks it does not keep (presence, a send that went) with nothing', () => {
    expect(read({ type: 'PresenceChatCallback', phone: '5544999999999', status: 'COMPOSING' })).toEqual({
      messages: [],
      statuses: [],
    });
    expect(
      read({
        phone: '554499999999',
        zaapId: 'A2',
        messageId: 'A8',
        instanceId: INSTANCE,
        type: 'DeliveryCallback',
      }),
    ).toEqual({ messages: [], statuses: [] });
  });
});
