import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { createSandbox } from '../../provider-sandbox/src/index.js';
import { socialAdapter } from '../src/adapters/social.js';
import { loopbackProviders } from './support.js';

// The Messenger adapter's calls carry appsecret_proof, which Graph checks against the app the Page is
// subscribed to: an app secret from another app is refused at the first call, where it would otherwise
// fail the signature of every callback.

const PAGE = '104729185532299';
const providers = loopbackProviders();
const { call } = providers;
let sandboxUrl = '';
let handshakeUrl = '';

beforeAll(async () => {
  sandboxUrl = await providers.listen(createSandbox({ httpCallbacks: 'allow' }).app);
  // The app's callback URL, which answers Meta's hub.challenge as the connector would.
  handshakeUrl = await providers.listen((req, res) => {
    res.end(new URL(req.url ?? '/', 'http://x').searchParams.get('hub.challenge') ?? '');
  });
});

async function subscribeToApp(channel: 'social', account: string, appSecret: string) {
  const res = await fetch(`${sandboxUrl}/_sandbox/${channel}/app`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      account,
      app_secret: appSecret,
      callback_url: `${handshakeUrl}/hook`,
      verify_token: 'v',
    }),
  });
  expect(res.status).toBe(200);
}

describe('appsecret_proof on Meta messaging calls', () => {
  it('refuses a Messenger integration whose app secret is not its app’s, as refused credentials', async () => {
    await subscribeToApp('social', PAGE, 'the-apps-secret');
    const config = (appSecret: string) => ({
      base_url: `${sandboxUrl}/social`,
      page_id: PAGE,
      page_access_token: 'EAAG-page-token',
      app_secret: appSecret,
      verify_token: 'v',
    });
    await expect(
      socialAdapter.registerInbound(config('another-apps-secret'), `${handshakeUrl}/hook`, call()),
    ).rejects.toMatchObject({
      name: 'ProviderError',
      refusal: 'credentials_rejected',
      providerCode: 100,
      message: expect.stringContaining('Invalid appsecret_proof provided in the API argument'),
    });
    await expect(
      socialAdapter.registerInbound(config('the-apps-secret'), `${handshakeUrl}/hook`, call()),
    ).resolves.toMatchObject({ manual: { url: `${handshakeUrl}/hook` } });
  });
});
