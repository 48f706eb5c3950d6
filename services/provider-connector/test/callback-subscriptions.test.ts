import { randomUUID } from 'node:crypto';
import type { Pool } from '@inbox/db';
import { createSandbox, type Sandbox } from '@inbox/provider-sandbox';
import { createLogger, SecretBox } from '@inbox/service-kit';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { socialAdapter } from '../src/adapters/social.js';
import { callbackSubscriptionSweep } from '../src/handlers/callback-subscriptions.js';
import { IntegrationStore } from '../src/store/integrations.js';
import { loopbackProviders, migratedPool } from './support.js';

// Meta unsubscribes an app whose webhooks have failed for an hour, and posts nothing more for the Page:
// the connector finds the subscription gone and subscribes the Page again.

const PAGE = '104729185532377';
const TOKEN = 'EAAG-page-subscriptions';
const APP_SECRET = 'the-apps-secret';
const providers = loopbackProviders();
const logLines: Array<Record<string, unknown>> = [];
const logger = createLogger('provider-connector', {
  level: 'warn',
  destination: { write: (line: string) => logLines.push(JSON.parse(line) as Record<string, unknown>) },
});
let pool: Pool;
let sandbox: Sandbox;
let sandboxUrl = '';
let downUrl = '';

beforeAll(async () => {
  pool = await migratedPool();
  // Meta's hour of retries times a ten-thousandth.
  sandbox = createSandbox({ httpCallbacks: 'allow', redeliveryDelayScale: 0.0001 });
  sandboxUrl = await providers.listen(sandbox.app);
  // The connector out of reach for posts: it answers Meta's handshake, and 503 to every webhook.
  downUrl = await providers.listen((req, res) => {
    if (req.method === 'GET')
      res.end(new URL(req.url ?? '/', 'http://x').searchParams.get('hub.challenge') ?? '');
    else res.writeHead(503).end();
  });
});
afterAll(async () => {
  await pool?.end();
});

const subscribedApps = async () =>
  (
    (await (
      await fetch(`${sandboxUrl}/social/v21.0/${PAGE}/subscribed_apps`, {
        headers: { authorization: `Bearer ${TOKEN}` },
      })
    ).json()) as { data: unknown[] }
  ).data;
const inbound = () =>
  fetch(`${sandboxUrl}/_sandbox/inbound`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ channel: 'social', account: PAGE, from: '6543219870123456', text: 'oi' }),
  });

it('subscribes a Page again once Meta has unsubscribed the app after an hour of failed webhooks', async () => {
  const config = {
    base_url: `${sandboxUrl}/social`,
    page_id: PAGE,
    page_access_token: TOKEN,
    app_secret: APP_SECRET,
    verify_token: 'v',
  };
  await socialAdapter.registerInbound(config, `${downUrl}/hook`, providers.call());
  const app = await fetch(`${sandboxUrl}/_sandbox/social/app`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      account: PAGE,
      app_secret: APP_SECRET,
      callback_url: `${downUrl}/hook`,
      verify_token: 'v',
    }),
  });
  expect(app.status).toBe(200);
  const store = new IntegrationStore(pool, new SecretBox(SecretBox.generateKey()));
  const workspaceId = randomUUID();
  const created = await store.create(workspaceId, { channel: 'social', config, accountId: PAGE });
  const sweep = callbackSubscriptionSweep(
    {
      pool,
      store,
      logger,
      guard: providers.guard,
      providerTimeoutMs: 5_000,
      publicConnectorUrl: downUrl,
    },
    { everyMs: 60_000, workers: 1 },
  );

  // Subscribed: the check changes nothing.
  await sweep.pass();
  expect(logLines).toEqual([]);

  expect(await (await inbound()).json()).toMatchObject({ delivered_status: 503, redelivering: true });
  await sandbox.redelivered();
  expect(await subscribedApps()).toEqual([]);
  expect((await inbound()).status).toBe(409);

  await pool.query('update integrations set subscription_checked_at = null where id = $1', [
    created!.integration.id,
  ]);
  await sweep.pass();
  await sweep.stop();
  expect(await subscribedApps()).toEqual([
    expect.objectContaining({ subscribed_fields: expect.arrayContaining(['messages']) }),
  ]);
  expect(await (await inbound()).json()).toMatchObject({ delivered_status: 503 });
  expect(logLines).toContainEqual(
    expect.objectContaining({
      msg: 'integration registered again: its provider had stopped calling it',
      integration_id: created!.integration.id,
      channel: 'social',
    }),
  );
  sandbox.reset();
});
