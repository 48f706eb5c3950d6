import { randomBytes, randomUUID } from 'node:crypto';
import { request } from 'node:http';
import { createPool, type Pool } from '@inbox/db';
import { type HostedService, hostService } from '@inbox/service-kit';
import { createDatabase, uniquePrefix } from '@inbox/testkit';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { requestHash } from '../src/domain/request-hash.js';
import { gatewayService, WorkspaceStore } from '../src/index.js';

// What costs an attacker nothing and the platform something: unknown keys, failed authentications,
// requests waiting on a busy Idempotency-Key, text the database cannot store.

const adminToken = `adm_${randomBytes(16).toString('hex')}`;
const failuresAllowed = 5;
const idempotencyWaitMs = 1_500;
/** How long the gateway trusts a key it found, shorter than its default for the test that waits it out. */
const keyCacheTtlMs = 1_000;
let gateway: HostedService;
let db: Pool;
let port: number;
let apiKey: string;
let workspaceId: string;

/** Each test speaks from its own loopback address, so per-address limits start afresh. */
let nextAddress = 10;
const newAddress = () => `127.0.0.${nextAddress++}`;

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: { error?: string } & Record<string, unknown>;
}

function call(
  method: string,
  path: string,
  init: { from: string; key?: string; body?: unknown; headers?: Record<string, string> },
): Promise<Answer> {
  const payload = init.body === undefined ? undefined : JSON.stringify(init.body);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method,
        path,
        localAddress: init.from,
        headers: {
          ...(init.key ? { authorization: `Bearer ${init.key}` } : {}),
          ...(payload ? { 'content-type': 'application/json' } : {}),
          ...init.headers,
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
        });
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text ? JSON.parse(text) : {} }),
        );
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

const admin = (method: string, path: string, body?: unknown) =>
  call(method, path, { from: '127.0.0.1', key: adminToken, body });
const unknownKey = () =>
  `sk_live_${randomBytes(30).toString('base64url').replace(/[-_]/g, 'x').slice(0, 40)}`;

beforeAll(async () => {
  const { natsUrl, postgresAdminUrl, redisUrl } = inject('infra');
  const databaseUrl = await createDatabase(postgresAdminUrl);
  gateway = await hostService(
    gatewayService({
      adminToken,
      redisUrl,
      rateLimitPerMinute: 1000,
      keyCacheTtlMs,
      authFailureLimits: { failures: failuresAllowed, windowSeconds: 10, blockSeconds: 30 },
      idempotency: { waitMs: idempotencyWaitMs, maxWaitersPerWorkspace: 2 },
    }),
    {
      databaseUrl,
      busUrl: natsUrl,
      busPrefix: uniquePrefix(),
      port: 0,
      host: '127.0.0.1',
      logLevel: 'silent',
    },
  );
  port = gateway.http.port;
  db = createPool({ url: databaseUrl, schema: 'gateway' });
  const created = await admin('POST', '/admin/v1/workspaces', { name: 'floods' });
  workspaceId = created.body.workspace_id as string;
  apiKey = created.body.api_key as string;
});
afterAll(async () => {
  await db?.end();
  await gateway?.stop();
});
afterEach(() => {
  vi.restoreAllMocks();
});

const validMessage = { phone: '+5511999990000', message: 'olá', channel: 'alt-a' };

describe('unknown API keys', () => {
  it('cost one database lookup however often they are repeated, also at once', async () => {
    const lookups = vi.spyOn(WorkspaceStore.prototype, 'findByKeyDigest');
    const from = newAddress();
    const key = unknownKey();
    const first = await Promise.all(
      Array.from({ length: 3 }, () =>
        call('POST', '/api/v1/send-message', { from, key, body: validMessage }),
      ),
    );
    const later = [];
    for (let i = 0; i < 2; i++)
      later.push(await call('POST', '/api/v1/send-message', { from, key, body: validMessage }));
    for (const answer of [...first, ...later]) {
      expect(answer).toMatchObject({ status: 401, body: { error: 'API Key inválida' } });
    }
    expect(lookups).toHaveBeenCalledTimes(1);
  });
});

/** A new address that used the valid key (known to this process since), then failed until refused. */
async function refusedAfterKnownKey(): Promise<string> {
  const from = newAddress();
  expect((await call('POST', '/api/v1/send-message', { from, key: apiKey, body: {} })).status).toBe(400);
  for (let i = 0; i <= failuresAllowed; i++)
    await call('POST', '/api/v1/send-message', { from, key: unknownKey(), body: {} });
  return from;
}

/** The status of a send-message from the address with the key of a workspace made now, never used. */
async function withNewWorkspaceKey(from: string): Promise<number> {
  const created = await admin('POST', '/admin/v1/workspaces', { name: `nova ${randomUUID()}` });
  return (await call('POST', '/api/v1/send-message', { from, key: created.body.api_key as string, body: {} }))
    .status;
}

describe('failed authentication per client address', () => {
  it('keeps the spec texts for the first failures, then answers 429 with Retry-After', async () => {
    const from = newAddress();
    const texts = [];
    for (let i = 0; i < failuresAllowed; i++) {
      const [path, key] = [
        ['/api/v1/send-message', unknownKey()],
        ['/api/v1/send-template', unknownKey()],
        ['/api/external/messages/send', unknownKey()],
        ['/api/external/messages/send', unknownKey()],
        [`/api/v1/leads/${randomUUID()}`, unknownKey()],
      ][i] as [string, string | undefined];
      const answer = await call(path.includes('leads') ? 'PATCH' : 'POST', path, { from, key, body: {} });
      expect(answer.status).toBe(401);
      texts.push(answer.body);
    }
    expect(texts).toEqual([
      { error: 'API Key inválida' },
      { error: 'API Key inválida' },
      { error: 'API Key inválida ou não encontrada' },
      { error: 'API Key inválida ou não encontrada' },
      { error: 'API Key inválida' },
    ]);

    const refused = await call('POST', '/api/v1/send-message', { from, key: unknownKey(), body: {} });
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({
      error: 'Muitas tentativas de autenticação inválidas deste endereço. Tente novamente mais tarde.',
    });
    const retryAfter = Number(refused.headers['retry-after']);
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(30);
  });

  it('does not count a missing or malformed key, which costs no lookup: callers behind one address share its budget', async () => {
    const from = newAddress();
    for (let i = 0; i < failuresAllowed * 4; i++) {
      const [path, key, text] = [
        ['/api/v1/send-message', undefined, 'API Key inválida'],
        ['/api/external/messages/send', undefined, 'Authorization header ausente'],
        ['/api/v1/send-message', 'not-a-key', 'API Key inválida'],
        ['/api/external/messages/send', 'not-a-key', 'API Key inválida ou não encontrada'],
      ][i % 4] as [string, string | undefined, string];
      expect(await call('POST', path, { from, key, body: {} })).toMatchObject({
        status: 401,
        body: { error: text },
      });
    }
    expect(await withNewWorkspaceKey(from)).toBe(400);
  });

  it('still looks up, for an address it refuses, a key found in a workspace in the last half hour', async () => {
    const from = await refusedAfterKnownKey();
    expect((await call('POST', '/api/v1/send-message', { from, key: unknownKey(), body: {} })).status).toBe(
      429,
    );
    // Past the seconds its entry is trusted: the key is looked up again, from the refused address too.
    await new Promise((resolve) => setTimeout(resolve, keyCacheTtlMs + 100));
    const lookups = vi.spyOn(WorkspaceStore.prototype, 'findByKeyDigest');
    expect((await call('POST', '/api/v1/send-message', { from, key: apiKey, body: {} })).status).toBe(400);
    expect(lookups).toHaveBeenCalledTimes(1);
    // A key that works but that this process never found would cost a lookup: refused.
    expect(await withNewWorkspaceKey(from)).toBe(429);
  });

  it('looks no more keys up for a refused address, but leaves known keys and other addresses alone', async () => {
    const from = await refusedAfterKnownKey();

    const lookups = vi.spyOn(WorkspaceStore.prototype, 'findByKeyDigest');
    for (let i = 0; i < 10; i++) {
      const answer = await call('POST', '/api/v1/send-message', { from, key: unknownKey(), body: {} });
      expect(answer.status).toBe(429);
    }
    expect(lookups).not.toHaveBeenCalled();

    expect((await call('POST', '/api/v1/send-message', { from, key: apiKey, body: {} })).body).toEqual({
      error: 'Parâmetros obrigatórios: phone, message, channel',
    });
    const other = newAddress();
    expect(
      await call('POST', '/api/v1/send-message', { from: other, key: unknownKey(), body: {} }),
    ).toMatchObject({ status: 401, body: { error: 'API Key inválida' } });
    expect((await call('POST', '/api/v1/send-message', { from: other, key: apiKey, body: {} })).status).toBe(
      400,
    );
  });

  it('counts the client a proxy in front names, not the proxy', async () => {
    const proxy = newAddress();
    const forwarded = (client: string) => ({
      from: proxy,
      key: unknownKey(),
      body: {},
      headers: { 'x-forwarded-for': client },
    });
    for (let i = 0; i < failuresAllowed; i++)
      expect((await call('POST', '/api/v1/send-message', forwarded('198.51.100.7'))).status).toBe(401);
    expect((await call('POST', '/api/v1/send-message', forwarded('198.51.100.7'))).status).toBe(429);
    expect((await call('POST', '/api/v1/send-message', forwarded('198.51.100.8'))).status).toBe(401);
  });

  it('counts wrong admin tokens too, and refuses the address whatever token it sends next', async () => {
    const from = newAddress();
    for (let i = 0; i < failuresAllowed; i++) {
      expect(
        await call('POST', '/admin/v1/workspaces', { from, key: `wrong-${i}`, body: { name: 'x' } }),
      ).toMatchObject({ status: 401, body: { error: 'Token de administração inválido' } });
    }
    const refused = await call('POST', '/admin/v1/workspaces', { from, key: 'wrong', body: { name: 'x' } });
    expect(refused.status).toBe(429);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    // A guess cannot be told right from wrong while the address is refused.
    expect((await call('GET', `/admin/v1/workspaces/${workspaceId}`, { from, key: adminToken })).status).toBe(
      429,
    );
    expect(
      (await call('GET', `/admin/v1/workspaces/${workspaceId}`, { from: newAddress(), key: adminToken }))
        .status,
    ).toBe(200);
  });
});

describe('waiting on an Idempotency-Key held by another request', () => {
  /** Makes the key look held by a request under way, as a concurrent first request would. */
  async function holdKey(key: string, body: unknown): Promise<void> {
    await db.query(
      `insert into idempotency_keys (workspace_id, key, request_hash, status) values ($1, $2, $3, 'in_progress')`,
      [workspaceId, key, requestHash('send-message', body)],
    );
  }

  const keyed = (key: string, from = newAddress()) =>
    call('POST', '/api/v1/send-message', {
      from,
      key: apiKey,
      body: validMessage,
      headers: { 'idempotency-key': key },
    });

  it('polls with one cheap query at a growing interval, then answers 409 with Retry-After', async () => {
    const key = `held-${randomUUID()}`;
    await holdKey(key, validMessage);
    const queries = vi.spyOn(pg.Pool.prototype, 'query');
    const started = Date.now();
    const answer = await keyed(key);
    expect(Date.now() - started).toBeGreaterThanOrEqual(idempotencyWaitMs - 100);
    expect(answer).toMatchObject({
      status: 409,
      body: { error: 'Uma requisição com esta Idempotency-Key ainda está em andamento' },
    });
    expect(answer.headers['retry-after']).toBe('1');
    const onKeys = queries.mock.calls.filter(([sql]) => String(sql).includes('idempotency_keys'));
    // Polling every 100 ms with two statements each would be some 30 here.
    expect(onKeys.length).toBeLessThanOrEqual(10);
  });

  it("gives a waiter the holder's answer as soon as it is recorded", async () => {
    const key = `held-${randomUUID()}`;
    await holdKey(key, validMessage);
    const waiting = keyed(key);
    await new Promise((resolve) => setTimeout(resolve, 200));
    await db.query(
      `update idempotency_keys set status = 'completed', response_status = 200, response_body = $3
        where workspace_id = $1 and key = $2`,
      [workspaceId, key, JSON.stringify({ success: true, first: 'answer' })],
    );
    const answer = await waiting;
    expect(answer).toMatchObject({ status: 200, body: { success: true, first: 'answer' } });
    expect(answer.headers['idempotent-replayed']).toBe('true');
  });

  it('answers 409 at once when too many requests of the workspace already wait', async () => {
    const key = `held-${randomUUID()}`;
    await holdKey(key, validMessage);
    const waiting = [keyed(key), keyed(key)];
    await new Promise((resolve) => setTimeout(resolve, 200));
    const started = Date.now();
    const extra = await keyed(key);
    expect(Date.now() - started).toBeLessThan(500);
    expect(extra.status).toBe(409);
    expect(extra.headers['retry-after']).toBe('1');
    expect((await Promise.all(waiting)).map((answer) => answer.status)).toEqual([409, 409]);
  });
});

describe('text the database cannot store', () => {
  const nul = 'a\u0000b';
  const loneSurrogate = 'a\uD800b';

  it('is refused with 400 in every admin name and webhook field', async () => {
    const ws = `/admin/v1/workspaces/${workspaceId}`;
    const pipeline = `${ws}/pipelines/${randomUUID()}`;
    const cases: Array<[string, string, unknown, string]> = [
      ['POST', '/admin/v1/workspaces', { name: nul }, 'name não pode conter o caractere NUL'],
      [
        'POST',
        `${ws}/members`,
        { name: nul, email: 'ana@example.com' },
        'name não pode conter o caractere NUL',
      ],
      ['POST', `${ws}/agents`, { name: loneSurrogate }, 'name não pode conter o caractere NUL'],
      [
        'POST',
        `${ws}/pipelines`,
        { name: nul, stages: [{ key: 'new', name: 'Novo' }] },
        'name não pode conter o caractere NUL',
      ],
      [
        'POST',
        `${ws}/pipelines`,
        { name: 'Vendas', stages: [{ key: 'new', name: nul }] },
        'name do estágio deve ser string de 1 a 200 caracteres',
      ],
      [
        'POST',
        `${ws}/pipelines`,
        { name: 'Vendas', stages: [{ key: nul, name: 'Novo' }] },
        'key deve ser string de 1 a 100 caracteres',
      ],
      ['PATCH', pipeline, { name: nul }, 'name não pode conter o caractere NUL'],
      [
        'PATCH',
        `${pipeline}/stages/new`,
        { name: loneSurrogate },
        'name do estágio deve ser string de 1 a 200 caracteres',
      ],
      [
        'POST',
        `${ws}/integrations`,
        { channel: 'alt-a', name: nul, config: {} },
        'name deve ser string de até 200 caracteres',
      ],
      [
        'POST',
        `${ws}/integrations`,
        { channel: 'alt-a', config: { instance: nul } },
        'config deve ser um objeto de strings',
      ],
      [
        'POST',
        `${ws}/webhooks`,
        { url: `https://hooks.example.com/${nul}`, events: ['*'] },
        'url deve ser uma URL http(s)',
      ],
      [
        'POST',
        `${ws}/webhooks`,
        { url: 'https://hooks.example.com/', events: ['*'], secret: nul },
        'secret deve ser string de 1 a 500 caracteres',
      ],
      [
        'PATCH',
        `${ws}/webhooks/${randomUUID()}`,
        { url: `https://hooks.example.com/${loneSurrogate}` },
        'url deve ser uma URL http(s)',
      ],
      [
        'GET',
        `${ws}/webhooks/${randomUUID()}/deliveries?event=%00`,
        undefined,
        'event deve ser string de até 200 caracteres',
      ],
    ];
    for (const [method, path, body, text] of cases) {
      const answer = await admin(method, path, body);
      expect(answer, `${method} ${path} ${JSON.stringify(body)}`).toMatchObject({
        status: 400,
        body: { error: text },
      });
    }
  });

  it('is refused with 400 in send-template headerMedia, and leaves no Idempotency-Key in flight', async () => {
    const template = { phone: '+5511999990000', templateName: 'boas_vindas', channel: 'chat-official' };
    const document = { type: 'document', link: 'https://files.example.com/a.pdf' };
    const cases: Array<[unknown, string]> = [
      [{ ...document, filename: nul }, 'headerMedia.filename deve ser string de até 240 caracteres'],
      [
        { ...document, filename: loneSurrogate },
        'headerMedia.filename deve ser string de até 240 caracteres',
      ],
      [
        { ...document, link: `https://files.example.com/${nul}` },
        'headerMedia.link é obrigatório e deve ser uma URL http(s)',
      ],
    ];
    for (const [headerMedia, text] of cases) {
      const key = `nul-${randomUUID()}`;
      const answer = await call('POST', '/api/v1/send-template', {
        from: '127.0.0.1',
        key: apiKey,
        body: { ...template, headerMedia },
        headers: { 'idempotency-key': key },
      });
      expect(answer).toMatchObject({ status: 400, body: { error: text } });
      const held = await db.query('select 1 from idempotency_keys where workspace_id = $1 and key = $2', [
        workspaceId,
        key,
      ]);
      expect(held.rowCount).toBe(0);
    }
    const answer = await call('POST', '/api/v1/send-message', {
      from: '127.0.0.1',
      key: apiKey,
      body: { ...validMessage, contactName: loneSurrogate },
    });
    expect(answer).toMatchObject({
      status: 400,
      body: { error: 'contactName deve ser string de até 255 caracteres' },
    });
  });
});
