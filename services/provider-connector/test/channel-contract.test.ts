import { expect } from 'vitest';
import { type ChannelUnderTest, channelContract } from './channel-contract.js';

// Every adapter against its sandbox emulator. Each gets its own database, sandbox and connector routes.

const PHONE = '5511944440001';
const wrongHeaders = (headers: Record<string, string>) =>
  Object.fromEntries(Object.keys(headers).map((name) => [name, 'not-the-registered-secret']));

channelContract({
  channel: 'chat-official',
  provider: 'chat-official',
  account: 'pn-contract',
  config: {
    phone_number_id: 'pn-contract',
    waba_id: 'waba-pn-contract',
    access_token: 'token-contract',
    app_secret: 'secret-contract',
    verify_token: 'verify-contract',
  },
  customer: PHONE,
  sender: { from: `+${PHONE}` },
  controlExtras: { app_secret: 'secret-contract' },
  recipient: { to: `+${PHONE}` },
  // Meta signs every callback with the app secret; a signature made with another key is not Meta's.
  forge: ({ url }) => ({ url, headers: { 'x-hub-signature-256': `sha256=${'0'.repeat(64)}` } }),
  listsWebhooks: false,
  statuses: true,
  // Meta's throttles (130429, 131056) are codes of their own, steered by the sandbox's
  // `/chat-official/throttle` control and proven in chat-official.test.ts.
  rateLimitRefusal: false,
});

channelContract({
  channel: 'alt-a',
  provider: 'chat',
  account: 'evo-contract',
  config: { instance: 'evo-contract', api_key: 'key-contract' },
  // Evolution knows only instances an operator created, in its manager, with their token.
  prepare: async (control) => {
    await control('/alt-a/instances', { instance: 'evo-contract', token: 'key-contract' });
    return {};
  },
  customer: PHONE,
  sender: { from: `+${PHONE}` },
  recipient: { to: `+${PHONE}` },
  // The secret header Evolution was told to send, with another value.
  forge: ({ url, headers }) => ({ url, headers: wrongHeaders(headers) }),
  listsWebhooks: true,
  statuses: true,
  rateLimitRefusal: false,
});

channelContract({
  channel: 'alt-b',
  provider: 'chat',
  account: 'z-contract',
  config: { instance_id: 'z-contract', token: 'token-contract' },
  customer: PHONE,
  sender: { from: `+${PHONE}` },
  recipient: { to: `+${PHONE}` },
  // Z-API repeats the secret we put in the callback URL; another value there is not ours.
  forge: ({ url }) => {
    const forged = new URL(url);
    for (const name of [...forged.searchParams.keys()])
      forged.searchParams.set(name, 'not-the-registered-secret');
    return { url: forged, headers: {} };
  },
  listsWebhooks: true,
  statuses: true,
  rateLimitRefusal: false,
});

channelContract({
  channel: 'bot',
  provider: 'bot',
  account: '555000111',
  config: { bot_token: '555000111:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw', secret_token: 'contract_secret-1' },
  customer: '700100200',
  sender: { from: null, from_user_id: '700100200' },
  recipient: { to: null, to_user_id: '700100200' },
  // The X-Telegram-Bot-Api-Secret-Token setWebhook registered, with another value.
  forge: ({ url, headers }) => ({ url, headers: wrongHeaders(headers) }),
  listsWebhooks: true,
  statuses: false,
  rateLimitRefusal: true,
});

const MARKET_APP = { client_id: '5503910054141466', client_secret: 'market-contract-secret' };
const MARKET_SELLER = '268897726';

channelContract({
  channel: 'market',
  provider: 'market',
  account: MARKET_SELLER,
  config: { seller_id: MARKET_SELLER, ...MARKET_APP },
  customer: '441782523',
  sender: { from: null, from_user_id: '441782523' },
  // A post-sale message: its sale stays open for every reply the suite sends (a question takes one answer).
  controlExtras: { topic: 'messages' },
  recipient: { to: null, to_user_id: '441782523' },
  // The seller's consent gives the token pair; the notification URL is set in the developer console.
  prepare: async (control) => {
    await control('/market/applications', MARKET_APP);
    const granted = await control('/market/authorizations', {
      client_id: MARKET_APP.client_id,
      seller_id: MARKET_SELLER,
    });
    return { access_token: granted.body.access_token, refresh_token: granted.body.refresh_token };
  },
  operatorSetup: async ({ control, callbackUrl }) => {
    await control('/market/applications', { ...MARKET_APP, notification_url: callbackUrl });
  },
  // Unsigned notifications: one naming another application and seller is not ours.
  forge: ({ url }) => ({
    url,
    headers: {},
    body: JSON.stringify({
      _id: '5da8a1b24be30a49eb66c52a',
      resource: '/questions/13000000000',
      user_id: 123456789,
      topic: 'questions',
      application_id: 2069392825111111,
      attempts: 1,
      sent: '2026-01-09T13:44:33.006Z',
      received: '2026-01-09T13:44:32.984Z',
    }),
  }),
  listsWebhooks: false,
  statuses: false,
  rateLimitRefusal: true,
});

// Meta's Messenger and Instagram webhooks go to the app's one callback URL, which the operator sets in
// the App Dashboard (verified by hub.challenge); the adapter subscribes the account to the app.
const metaApp =
  (channel: 'social' | 'photo', account: string) =>
  async ({ control, callbackUrl }: Parameters<NonNullable<ChannelUnderTest['operatorSetup']>>[0]) => {
    const set = await control(`/${channel}/app`, {
      account,
      callback_url: callbackUrl,
      verify_token: 'verify-contract',
      app_secret: 'secret-contract',
    });
    expect(set).toEqual({ status: 200, body: { ok: true } });
  };

channelContract({
  channel: 'social',
  provider: 'social',
  account: '104729185532201',
  config: {
    page_id: '104729185532201',
    page_access_token: 'EAAGpage-token-contract',
    app_secret: 'secret-contract',
    verify_token: 'verify-contract',
  },
  customer: '6543219870123456',
  sender: { from: null, from_user_id: '6543219870123456' },
  recipient: { to: null, to_user_id: '6543219870123456' },
  forge: ({ url }) => ({ url, headers: { 'x-hub-signature-256': `sha256=${'0'.repeat(64)}` } }),
  listsWebhooks: true,
  statuses: true,
  rateLimitRefusal: true,
  operatorSetup: metaApp('social', '104729185532201'),
});

channelContract({
  channel: 'photo',
  provider: 'photo',
  account: '17841400000000001',
  config: {
    ig_user_id: '17841400000000001',
    access_token: 'IGAAtoken-contract',
    app_secret: 'secret-contract',
    verify_token: 'verify-contract',
  },
  customer: '1234567890123456',
  sender: { from: null, from_user_id: '1234567890123456' },
  recipient: { to: null, to_user_id: '1234567890123456' },
  forge: ({ url }) => ({ url, headers: { 'x-hub-signature-256': `sha256=${'0'.repeat(64)}` } }),
  listsWebhooks: true,
  // Instagram reports reads (by mid), never deliveries: proven in the adapter's and emulator's tests.
  statuses: false,
  rateLimitRefusal: true,
  operatorSetup: metaApp('photo', '17841400000000001'),
});
