import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { AddressPolicy, OutboundGuard } from '@inbox/outbound-http';
import { createLogger } from '@inbox/service-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSandbox } from '../../provider-sandbox/src/index.js';
import type { ProviderCall } from '../src/adapters/channel-adapter.js';
import { socialAdapter } from '../src/adapters/social.js';

// The Messenger adapter's calls carry appsecret_proof, which Graph checks against the app the Page is
// subscribed to: an app secret from another app is refused at the first call, where it would otherwise
// fail the signature of every callback.

const PAGE = '104729185532299';
const logger = createLogger('provider-connector', { level: 'silent' });
const servers: Server[] = [];
let sandboxUrl = '';
let handshakeUrl = '';
let guard: OutboundGuard;

async function listen(server: Server): Promise<string> {
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

beforeAll(async () => {
  sandboxUrl = await listen(createServer(createSandbox({ httpCallbacks: 'allow' }).app));
  // The app's callback URL, which answers Meta's hub.challenge as the connector would.
  handshakeUrl = await listen(
    createServer((req, res) => {
      res.end(new URL(req.url ?? '/', 'http://x').searchParams.get('hub.challenge') ?? '');
    }),
  );
  guard = new OutboundGuard(AddressPolicy.fromSetting('127.0.0.0/8'), { timeoutMs: 5_000 });
});

afterAll(async () => {
  for (const server of servers) {
    server.closeAllConnections();
    server.close();
  }
  await guard?.close();
});

const call = (): ProviderCall => ({
  guard,
  workspaceId: randomUUID(),
  logger,
  signal: AbortSignal.timeout(5_000),
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
