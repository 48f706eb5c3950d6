import { randomBytes, randomUUID } from 'node:crypto';
import type { HostedService } from '@inbox/service-kit';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { hostGateway } from './host-gateway.js';

const adminToken = `adm_${randomBytes(16).toString('hex')}`;
let gateway: HostedService;
let url: string;
let apiKey: string;
let workspaceId: string;

async function call(
  method: string,
  path: string,
  init: { key?: string; body?: unknown; raw?: string; headers?: Record<string, string> } = {},
) {
  const response = await fetch(`${url}${path}`, {
    method,
    headers: {
      ...(init.key ? { authorization: `Bearer ${init.key}` } : {}),
      ...(init.body !== undefined || init.raw !== undefined ? { 'content-type': 'application/json' } : {}),
      ...init.headers,
    },
    body: init.raw ?? (init.body === undefined ? undefined : JSON.stringify(init.body)),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : undefined };
}

const admin = (method: string, path: string, body?: unknown) => call(method, path, { key: adminToken, body });

async function newWorkspace(): Promise<{ id: string; key: string }> {
  const created = await admin('POST', '/admin/v1/workspaces', { name: `ws ${randomUUID()}` });
  return { id: created.body.workspace_id, key: created.body.api_key };
}

beforeAll(async () => {
  const { redisUrl } = inject('infra');
  gateway = await hostGateway({ adminToken, redisUrl, rateLimitPerMinute: 1000 });
  url = gateway.http.url;
  ({ id: workspaceId, key: apiKey } = await newWorkspace());
});
afterAll(() => gateway?.stop());

const validMessage = { phone: '+5511999990000', message: 'olá', channel: 'alt-a' };
const validTemplate = { phone: '+5511999990000', templateName: 'boas_vindas', channel: 'chat-official' };
const validExternal = { conversation_id: randomUUID(), text: 'olá' };
const validLead = { pipeline_id: randomUUID(), stage: 'qualified' };

describe('authentication texts per endpoint', () => {
  const v1 = [
    ['POST', '/api/v1/send-message', validMessage],
    ['POST', '/api/v1/send-template', validTemplate],
    ['PATCH', `/api/v1/leads/${randomUUID()}`, validLead],
  ] as const;

  it.each(v1)('%s %s: missing or invalid key is 401 API Key inválida', async (method, path, body) => {
    for (const key of [
      undefined,
      'sk_live_',
      'sk_live_0000000000000000000000000000000000000000',
      'not-a-key',
    ]) {
      const answer = await call(method, path, { key, body });
      expect(answer.status).toBe(401);
      expect(answer.body).toEqual({ error: 'API Key inválida' });
    }
    const basic = await call(method, path, { headers: { authorization: 'Basic abc' }, body });
    expect(basic.body).toEqual({ error: 'API Key inválida' });
  });

  it('external send tells a missing header from an unknown key', async () => {
    expect(await call('POST', '/api/external/messages/send', { body: validExternal })).toMatchObject({
      status: 401,
      body: { error: 'Authorization header ausente' },
    });
    for (const key of ['sk_live_0000000000000000000000000000000000000000', 'whatever']) {
      expect(await call('POST', '/api/external/messages/send', { key, body: validExternal })).toMatchObject({
        status: 401,
        body: { error: 'API Key inválida ou não encontrada' },
      });
    }
  });

  it('an inactive or suspended workspace gets 403 Workspace inativo on every endpoint', async () => {
    for (const status of ['inactive', 'suspended']) {
      const ws = await newWorkspace();
      expect((await admin('PATCH', `/admin/v1/workspaces/${ws.id}`, { status })).status).toBe(200);
      for (const [method, path, body] of [
        ...v1,
        ['POST', '/api/external/messages/send', validExternal] as const,
      ]) {
        const answer = await call(method, path, { key: ws.key, body });
        expect(answer, `${status} ${path}`).toMatchObject({
          status: 403,
          body: { error: 'Workspace inativo' },
        });
      }
    }
  });

  it('admin calls need the admin token', async () => {
    for (const key of [undefined, 'wrong-token', apiKey]) {
      const answer = await call('POST', '/admin/v1/workspaces', { key, body: { name: 'x' } });
      expect(answer.status).toBe(401);
      expect(answer.body).toEqual({ error: 'Token de administração inválido' });
    }
  });
});

describe('body validation texts', () => {
  const cases: Array<[string, string, unknown, string]> = [
    ['POST', '/api/v1/send-message', {}, 'Parâmetros obrigatórios: phone, message, channel'],
    [
      'POST',
      '/api/v1/send-message',
      { ...validMessage, channel: 'bot' },
      'channel inválido. Use "chat-official", "alt-a" ou "alt-b"',
    ],
    [
      'POST',
      '/api/v1/send-message',
      { ...validMessage, phone: '12345' },
      'phone inválido. Forneça em E.164 ou só dígitos (mínimo 10).',
    ],
    [
      'POST',
      '/api/v1/send-message',
      { ...validMessage, message: 'x'.repeat(4097) },
      'message deve ser string de 1–4096 caracteres',
    ],
    [
      'POST',
      '/api/v1/send-message',
      { ...validMessage, integrationId: 'abc' },
      'integrationId deve ser um UUID',
    ],
    [
      'POST',
      '/api/v1/send-template',
      { phone: '+5511999990000' },
      'Parâmetros obrigatórios: phone, templateName, channel',
    ],
    [
      'POST',
      '/api/v1/send-template',
      { ...validTemplate, channel: 'alt-a' },
      'channel inválido. Templates (HSM) só são suportados pelo canal "chat-official"',
    ],
    ['POST', '/api/v1/send-template', { ...validTemplate, variables: 'a' }, 'variables deve ser array'],
    [
      'POST',
      '/api/v1/send-template',
      { ...validTemplate, variables: [{}] },
      'variables deve conter apenas strings ou números',
    ],
    [
      'POST',
      '/api/v1/send-template',
      { ...validTemplate, variables: Array.from({ length: 101 }, () => 'x') },
      'variables deve ter no máximo 100 itens, cada um com até 1024 caracteres',
    ],
    [
      'POST',
      '/api/v1/send-template',
      { ...validTemplate, variables: ['x'.repeat(1025)] },
      'variables deve ter no máximo 100 itens, cada um com até 1024 caracteres',
    ],
    [
      'POST',
      '/api/v1/send-template',
      { ...validTemplate, headerMedia: { type: 'gif', link: 'https://x.test/a.gif' } },
      'headerMedia.type deve ser "image", "video" ou "document"',
    ],
    [
      'POST',
      '/api/v1/send-template',
      { ...validTemplate, headerMedia: { type: 'image' } },
      'headerMedia.link é obrigatório e deve ser uma URL http(s)',
    ],
    [
      'POST',
      '/api/v1/send-template',
      { ...validTemplate, headerMedia: { type: 'image', link: 'https://x.test/a.png', filename: 'a.png' } },
      'headerMedia.filename só é permitido quando headerMedia.type é "document"',
    ],
    ['POST', '/api/v1/send-template', { ...validTemplate, buttons: {} }, 'buttons deve ser array'],
    [
      'POST',
      '/api/v1/send-template',
      { ...validTemplate, buttons: [{ index: -1, type: 'url', text: 'a' }] },
      'buttons[0].index deve ser inteiro maior ou igual a 0',
    ],
    [
      'POST',
      '/api/v1/send-template',
      { ...validTemplate, buttons: [{ index: 0, type: 'call' }] },
      'buttons[0].type deve ser "url" ou "quick_reply"',
    ],
    [
      'POST',
      '/api/v1/send-template',
      { ...validTemplate, buttons: [{ index: 0, type: 'url' }] },
      'buttons[0].text é obrigatório (string não vazia) para botões do tipo "url"',
    ],
    [
      'POST',
      '/api/v1/send-template',
      { ...validTemplate, buttons: [{ index: 1, type: 'quick_reply', payload: '' }] },
      'buttons[0].payload é obrigatório (string não vazia) para botões do tipo "quick_reply"',
    ],
    [
      'POST',
      '/api/v1/send-template',
      {
        ...validTemplate,
        buttons: [
          { index: 0, type: 'url', text: 'a' },
          { index: 0, type: 'quick_reply', payload: 'p' },
        ],
      },
      'buttons não pode repetir o index 0',
    ],
    ['POST', '/api/external/messages/send', { text: 'x' }, 'Parâmetros obrigatórios: conversation_id, text'],
    [
      'POST',
      '/api/external/messages/send',
      { ...validExternal, sender_type: 'bot' },
      'sender_type deve ser "agent" ou "system"',
    ],
    [
      'POST',
      '/api/external/messages/send',
      { ...validExternal, conversation_id: '123' },
      'conversation_id deve ser um UUID',
    ],
    [
      'POST',
      '/api/external/messages/send',
      { ...validExternal, sender_name: 'x'.repeat(121) },
      'sender_name deve ser string de até 120 caracteres',
    ],
    ['PATCH', `/api/v1/leads/${randomUUID()}`, { stage: 'a' }, 'Parâmetros obrigatórios: pipeline_id, stage'],
    [
      'PATCH',
      `/api/v1/leads/${randomUUID()}`,
      { ...validLead, pipeline_id: 'p1' },
      'pipeline_id deve ser um UUID',
    ],
    [
      'PATCH',
      `/api/v1/leads/${randomUUID()}`,
      { ...validLead, conversation_id: 7 },
      'conversation_id deve ser um UUID',
    ],
    ['PATCH', '/api/v1/leads/not-a-uuid', validLead, 'id deve ser um UUID'],
  ];
  it.each(cases)('%s %s %j → %s', async (method, path, body, text) => {
    const answer = await call(method, path, { key: apiKey, body });
    expect(answer.status).toBe(400);
    expect(answer.body).toEqual({ error: text });
  });
});

describe('HTTP hygiene', () => {
  it('answers broken JSON, oversize bodies, unknown routes and wrong methods with ErrorResponses', async () => {
    expect(await call('POST', '/api/v1/send-message', { key: apiKey, raw: '{"phone":' })).toMatchObject({
      status: 400,
      body: { error: 'Corpo da requisição não é JSON válido' },
    });
    const huge = JSON.stringify({ ...validMessage, message: 'x'.repeat(1_100_000) });
    expect(await call('POST', '/api/v1/send-message', { key: apiKey, raw: huge })).toMatchObject({
      status: 413,
      body: { error: 'Corpo da requisição excede o tamanho máximo' },
    });
    expect(await call('GET', '/api/v1/nothing-here', { key: apiKey })).toMatchObject({
      status: 404,
      body: { error: 'Rota não encontrada' },
    });
    const wrongMethod = await call('GET', '/api/v1/send-message', { key: apiKey });
    expect(wrongMethod).toMatchObject({
      status: 405,
      body: { error: 'Método não permitido para esta rota' },
    });
    expect(wrongMethod.headers.get('allow')).toBe('POST');
    expect((await call('DELETE', '/admin/v1/workspaces', { key: adminToken })).status).toBe(405);
  });

  it("reads no more of a public route's body than its longest field needs, and more of the admin API's", async () => {
    const tooLarge = { status: 413, body: { error: 'Corpo da requisição excede o tamanho máximo' } };
    // 70 KiB of keys no request has: past what external send, send-message or a lead move read.
    const padded = (body: object) => JSON.stringify({ ...body, pad: 'x'.repeat(70 * 1024) });
    for (const [method, path, body] of [
      ['POST', '/api/external/messages/send', { conversation_id: randomUUID(), text: 'oi' }],
      ['POST', '/api/v1/send-message', validMessage],
      ['PATCH', `/api/v1/leads/${randomUUID()}`, validLead],
    ] as const) {
      expect(await call(method, path, { key: apiKey, raw: padded(body) })).toMatchObject(tooLarge);
    }
    // A message of 4,096 emoji, each escaped as a surrogate pair, still fits.
    const longest = `{"phone":"${validMessage.phone}","channel":"alt-a","message":"${'\\ud83d\\ude00'.repeat(4_096)}"}`;
    expect(longest.length).toBeGreaterThan(48 * 1024);
    expect((JSON.parse(longest) as { message: string }).message).toBe('😀'.repeat(4_096));
    expect((await call('POST', '/api/v1/send-message', { key: apiKey, raw: longest })).status).not.toBe(413);
    // send-template reads its hundred variables of 1,024 characters, escaped; the admin API, a config of 32 values.
    const template = {
      phone: validMessage.phone,
      templateName: 'promo',
      channel: 'chat-official',
      variables: Array.from({ length: 100 }, () => 'é'.repeat(1_024)),
    };
    const escaped = JSON.stringify(template).replaceAll('é', '\\u00e9');
    expect(escaped.length).toBeGreaterThan(600 * 1024);
    expect((await call('POST', '/api/v1/send-template', { key: apiKey, raw: escaped })).status).not.toBe(413);
    const config = Object.fromEntries(Array.from({ length: 32 }, (_, i) => [`k${i}`, 'v'.repeat(8_192)]));
    const created = await admin('POST', `/admin/v1/workspaces/${randomUUID()}/integrations`, {
      channel: 'alt-a',
      config,
    });
    expect(created.status).not.toBe(413);
  });

  it('refuses a body nested deeper than any request with a 400, Idempotency-Key or not', async () => {
    // Nested 5,000 deep, 10 KB: the idempotency record's hash of the body overflowed the stack on it (a 500).
    const deep = (levels: number) =>
      `${JSON.stringify(validMessage).slice(0, -1)},"x":${'['.repeat(levels)}${']'.repeat(levels)}}`;
    const keys: Record<string, string>[] = [{}, { 'idempotency-key': `deep-${randomUUID()}` }];
    for (const headers of keys) {
      for (const [method, path] of [
        ['POST', '/api/v1/send-message'],
        ['POST', '/api/external/messages/send'],
        ['PATCH', `/api/v1/leads/${randomUUID()}`],
      ] as const) {
        const answer = await call(method, path, { key: apiKey, raw: deep(5_000), headers });
        expect(answer, `${path} ${JSON.stringify(headers)}`).toMatchObject({
          status: 400,
          body: { error: 'Corpo da requisição aninha objetos ou listas em mais de 32 níveis' },
        });
      }
    }
    // 32 levels, the body's own among them, are taken: the owner is not there, so the answer is its 503.
    const deepest = await call('POST', '/api/v1/send-message', { key: apiKey, raw: deep(31) });
    expect(deepest.status).toBe(503);
    expect((await call('POST', '/api/v1/send-message', { key: apiKey, raw: deep(32) })).status).toBe(400);
  });

  it('checks the key before judging the body', async () => {
    expect(await call('POST', '/api/v1/send-message', { raw: '{broken' })).toMatchObject({
      status: 401,
      body: { error: 'API Key inválida' },
    });
  });

  it('echoes a given X-Request-Id and makes one otherwise', async () => {
    const given = await call('POST', '/api/v1/send-message', {
      key: apiKey,
      body: {},
      headers: { 'x-request-id': 'abc-123' },
    });
    expect(given.headers.get('x-request-id')).toBe('abc-123');
    const made = await call('POST', '/api/v1/send-message', { key: apiKey, body: {} });
    expect(made.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('answers 503 with an ErrorResponse, not a hang, when the owning service is not there', async () => {
    const answer = await call('POST', '/api/v1/send-message', { key: apiKey, body: validMessage });
    expect(answer).toMatchObject({ status: 503, body: { error: 'Serviço temporariamente indisponível' } });
  });

  it('never answers 5xx to malformed input', async () => {
    const junk: unknown[] = [
      null,
      [],
      [1, 2],
      'text',
      42,
      true,
      { phone: null, message: null, channel: null },
      { phone: [], message: {}, channel: [] },
      { phone: { a: 1 }, message: 'x', channel: 'alt-a' },
      { phone: '+5511999990000', message: ['x'], channel: 'alt-a' },
      { phone: '9'.repeat(10_000), message: 'x', channel: 'alt-a' },
      { phone: '+5511999990000', message: 'x'.repeat(200_000), channel: 'alt-a' },
      { ...validMessage, integrationId: 'x'.repeat(5_000) },
      { ...validMessage, agentId: { $ne: null } },
      { ...validMessage, contactName: 12 },
      { ...validTemplate, variables: [null] },
      { ...validTemplate, buttons: [null] },
      { ...validTemplate, headerMedia: 'https://x' },
      { ...validTemplate, language: 'português' },
      { ...validExternal, conversation_id: "'; drop table workspaces; --" },
      { ...validLead, stage: 'x'.repeat(500) },
      { ...validLead, stage: {} },
    ];
    const endpoints = [
      ['POST', '/api/v1/send-message'],
      ['POST', '/api/v1/send-template'],
      ['POST', '/api/external/messages/send'],
      ['PATCH', `/api/v1/leads/${randomUUID()}`],
      ['PATCH', '/api/v1/leads/%00'],
    ] as const;
    for (const [method, path] of endpoints) {
      for (const body of junk) {
        const answer = await call(method, path, { key: apiKey, raw: JSON.stringify(body) });
        expect(
          answer.status,
          `${method} ${path} ${JSON.stringify(body).slice(0, 80)}`,
        ).toBeGreaterThanOrEqual(400);
        expect(answer.status, `${method} ${path} ${JSON.stringify(body).slice(0, 80)}`).toBeLessThan(500);
        expect(typeof answer.body.error).toBe('string');
      }
      for (const raw of ['{', '{"a":}', '\u0000', 'nul', '[', '{"a":1}}']) {
        const answer = await call(method, path, { key: apiKey, raw });
        expect(answer.status, `${path} ${raw}`).toBe(400);
      }
    }
  });
});

describe('admin API for workspaces', () => {
  it('creates, reads, changes status, rotates keys, and refuses bad input', async () => {
    const created = await admin('POST', '/admin/v1/workspaces', {
      name: 'Loja',
      default_country_code: '351',
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ name: 'Loja', status: 'active', default_country_code: '351' });
    expect(created.body.api_key).toMatch(/^sk_live_[0-9A-Za-z]{40}$/);
    const id = created.body.workspace_id;
    expect((await admin('GET', `/admin/v1/workspaces/${id}`)).body).not.toHaveProperty('api_key');
    expect((await admin('PATCH', `/admin/v1/workspaces/${id}`, { status: 'paused' })).status).toBe(400);
    expect((await admin('POST', '/admin/v1/workspaces', {})).body).toEqual({ error: 'name é obrigatório' });
    expect((await admin('GET', '/admin/v1/workspaces/nope')).status).toBe(400);
    expect((await admin('GET', `/admin/v1/workspaces/${randomUUID()}`)).status).toBe(404);

    const rotated = await admin('POST', `/admin/v1/workspaces/${id}/api-key`);
    expect(rotated.status).toBe(201);
    expect(rotated.body.api_key).not.toBe(created.body.api_key);
    expect((await call('POST', '/api/v1/send-message', { key: created.body.api_key, body: {} })).status).toBe(
      401,
    );
    expect((await call('POST', '/api/v1/send-message', { key: rotated.body.api_key, body: {} })).status).toBe(
      400,
    );
  });

  it('keeps workspace ids scoped: a key never reaches another workspace through the admin path', async () => {
    expect(workspaceId).toMatch(/^[0-9a-f-]{36}$/);
    const other = await newWorkspace();
    const answer = await call('POST', `/admin/v1/workspaces/${other.id}/api-key`, { key: apiKey });
    expect(answer.status).toBe(401);
  });
});
