import { createHmac, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Pool } from '@inbox/db';
import { AddressPolicy, OutboundGuard } from '@inbox/outbound-http';
import { createLogger, SecretBox } from '@inbox/service-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { altAAdapter } from '../src/adapters/alt-a.js';
import type { ProviderCall } from '../src/adapters/channel-adapter.js';
import { chatOfficialAdapter } from '../src/adapters/chat-official.js';
import { createIntegration } from '../src/handlers/integrations.js';
import { IntegrationStore } from '../src/store/integrations.js';
import { migratedPool } from './support.js';

interface Hit {
  url: string;
  headers: IncomingHttpHeaders;
}

const closers: Array<() => Promise<void>> = [];

/** A fake provider on 127.0.0.1 that records every request. */
async function fakeProvider(answer: (hit: Hit, res: ServerResponse, origin: string) => void) {
  const hits: Hit[] = [];
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const hit = { url: req.url ?? '', headers: req.headers };
      hits.push(hit);
      answer(hit, res, origin);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  closers.push(async () => {
    server.closeAllConnections();
    server.close();
  });
  return { origin, hits };
}

/** Log lines, to see what the connector told the operator. */
const logLines: string[] = [];
const logger = createLogger('provider-connector', {
  level: 'warn',
  destination: { write: (line: string) => logLines.push(line) },
});

function guard(allowedCidrs = ''): OutboundGuard {
  const created = new OutboundGuard(AddressPolicy.fromSetting(allowedCidrs), { timeoutMs: 2_000 });
  closers.push(() => created.close());
  return created;
}

function providerCall(allowedCidrs = ''): ProviderCall {
  return { guard: guard(allowedCidrs), workspaceId: 'w1', logger, signal: AbortSignal.timeout(2_000) };
}

let pool: Pool;
beforeAll(async () => {
  pool = await migratedPool();
});
afterAll(async () => {
  await Promise.all(closers.map((close) => close()));
  await pool?.end();
});

describe('integration create', () => {
  const workspace = randomUUID();
  const deps = () => ({
    store: new IntegrationStore(pool, new SecretBox(SecretBox.generateKey())),
    guard: guard(),
    logger,
    publicConnectorUrl: 'https://connector.example.com',
    providerTimeoutMs: 2_000,
  });

  it.each([
    ['alt-a', 'http://169.254.169.254/', { instance: 'i', api_key: 'k' }],
    ['alt-b', 'http://10.0.0.1/', { instance_id: 'i', token: 't', client_token: 'c' }],
    [
      'chat-official',
      'http://[::ffff:a9fe:a9fe]/',
      {
        phone_number_id: '1',
        waba_id: '2',
        access_token: 'a',
        app_secret: 's',
        verify_token: 'v',
      },
    ],
  ] as const)('refuses %s with base_url %s, before anything is stored', async (channel, baseUrl, rest) => {
    const host = new URL(baseUrl).hostname.replace(/^\[|\]$/g, '');
    await expect(
      createIntegration(deps(), {
        workspace_id: workspace,
        channel,
        config: { base_url: baseUrl, ...rest },
      }),
    ).rejects.toMatchObject({
      status: 400,
      body: { error: `config.base_url recusada: o destino ${host} aponta para um endereço não permitido` },
    });
    const { rows } = await pool.query('select count(*)::int as n from integrations where workspace_id = $1', [
      workspace,
    ]);
    expect(rows[0].n).toBe(0);
  });

  it('refuses a name that resolves to a private address, naming the host but not the address', async () => {
    const failure = await createIntegration(deps(), {
      workspace_id: workspace,
      channel: 'alt-a',
      config: { base_url: 'http://localhost:1/', instance: 'i', api_key: 'k' },
    }).catch((error: unknown) => error as { status: number; body: { error: string } });
    expect(failure).toMatchObject({
      status: 400,
      body: { error: 'config.base_url recusada: o destino localhost aponta para um endereço não permitido' },
    });
    // The operator's log has the address; the caller does not.
    expect(logLines.some((line) => /"host":"localhost","address":"(127\.0\.0\.1|::1)"/.test(line))).toBe(
      true,
    );
  });
});

describe('provider calls', () => {
  const official = (baseUrl: string) => ({
    base_url: baseUrl,
    phone_number_id: 'pn-1',
    waba_id: 'waba-1',
    access_token: 'the-bearer-token',
    app_secret: 's',
    verify_token: 'v',
    api_version: 'v21.0',
  });
  const page = (name: string, next?: string) => ({
    data: [{ name, language: 'pt_BR', status: 'APPROVED', components: [{ type: 'BODY', text: 'Olá' }] }],
    ...(next ? { paging: { next } } : {}),
  });

  it("follows paging.next on the base_url's origin only", async () => {
    const elsewhere = await fakeProvider((_hit, res) => res.end(JSON.stringify(page('stolen'))));
    const provider = await fakeProvider((hit, res, origin) => {
      res.setHeader('content-type', 'application/json');
      // Page 1 points at page 2 here; page 2 points at another origin.
      res.end(
        JSON.stringify(
          hit.url.includes('after=p2')
            ? page('second', `${elsewhere.origin}/v21.0/waba-1/message_templates?after=p3`)
            : page('first', `${origin}/graph/v21.0/waba-1/message_templates?after=p2`),
        ),
      );
    });
    const listed = await chatOfficialAdapter.templates!.list(
      official(`${provider.origin}/graph`),
      providerCall('127.0.0.0/8'),
    );
    expect(listed.map((t) => t.name)).toEqual(['first', 'second']);
    expect(provider.hits).toHaveLength(2);
    // Every page carries the app's proof (HMAC-SHA256 of the token keyed with the app secret), page 2 too.
    const proof = createHmac('sha256', 's').update('the-bearer-token').digest('hex');
    expect(provider.hits[0]!.url).toBe(
      `/graph/v21.0/waba-1/message_templates?appsecret_proof=${proof}&limit=100`,
    );
    expect(new URL(provider.hits[1]!.url, provider.origin).searchParams.get('appsecret_proof')).toBe(proof);
    expect(elsewhere.hits).toHaveLength(0);
    expect(logLines.some((line) => line.includes('paging.next leaves the base_url origin'))).toBe(true);
  });

  it('never follows a redirect with the credentials', async () => {
    const elsewhere = await fakeProvider((_hit, res) => res.end('{"key":{"id":"x"}}'));
    const provider = await fakeProvider((_hit, res) => {
      res.writeHead(307, { location: `${elsewhere.origin}/message/sendText/i` });
      res.end();
    });
    await expect(
      altAAdapter.sendText(
        { base_url: provider.origin, instance: 'i', api_key: 'the-api-key' },
        { to: '5511999990000', text: 'oi' },
        providerCall('127.0.0.0/8'),
      ),
    ).rejects.toMatchObject({ name: 'ProviderError', status: 307 });
    expect(provider.hits[0]!.headers.apikey).toBe('the-api-key');
    expect(elsewhere.hits).toHaveLength(0);
  });

  it('refuses a provider on a private address when it is not allowed, even if stored earlier', async () => {
    const provider = await fakeProvider((_hit, res) => res.end('{"key":{"id":"x"}}'));
    await expect(
      altAAdapter.sendText(
        { base_url: provider.origin, instance: 'i', api_key: 'k' },
        { to: '5511999990000', text: 'oi' },
        providerCall(),
      ),
    ).rejects.toMatchObject({ name: 'ProviderError', message: expect.stringMatching(/forbidden address/) });
    expect(provider.hits).toHaveLength(0);
  });
});
