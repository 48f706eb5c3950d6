import { gzipSync } from 'node:zlib';
import { AppError } from '@inbox/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  ConfigError,
  createHttpApp,
  createLogger,
  finishHttpApp,
  listen,
  loadConfig,
  type RunningServer,
} from '../src/index.js';

const lines: string[] = [];
const logger = createLogger('test', { destination: { write: (line: string) => lines.push(line) } });
let server: RunningServer;
let ready = true;

beforeAll(async () => {
  const app = createHttpApp({ logger, bodyLimit: '1kb', readiness: { dependency: () => ready } });
  app.post('/echo', (req, res) => {
    res.json(req.body);
  });
  app.get('/known', () => {
    throw new AppError(409, { error: 'Conflito conhecido' });
  });
  app.get('/wrapped', (_req, res) => {
    // As the gateway's idempotency record does: its own json, which sees the answer first.
    const json = res.json.bind(res);
    res.json = (body: { error: string }) => {
      res.setHeader('X-Seen', `${res.statusCode} ${body.error}`);
      return json(body);
    };
    throw new AppError(409, { error: 'Conflito conhecido' });
  });
  app.get('/boom', () => {
    throw new Error('database password is hunter2');
  });
  app.get('/log', (req, res) => {
    logger.info(
      {
        headers: { authorization: req.get('authorization'), Authorization: 'Bearer other' },
        api_key: 'sk_live_x',
        config: { token: 't' },
        command: { payload: { secret: 'deep-secret' } },
        request: { apikey: 'alt-a-key', client_token: 'ct' },
      },
      'sensitive',
    );
    res.json({ ok: true });
  });
  finishHttpApp(app, logger);
  server = await listen(app, 0, '127.0.0.1');
});
afterAll(() => server.close());

const post = (path: string, body: string) =>
  fetch(`${server.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });

describe('service HTTP app', () => {
  it('answers every failure with an ErrorResponse', async () => {
    const malformed = await post('/echo', '{"a":');
    expect(malformed.status).toBe(400);
    expect(await malformed.json()).toEqual({ error: 'Corpo da requisição não é JSON válido' });

    const tooLarge = await post('/echo', JSON.stringify({ a: 'x'.repeat(2_000) }));
    expect(tooLarge.status).toBe(413);
    expect(await tooLarge.json()).toEqual({ error: 'Corpo da requisição excede o tamanho máximo' });

    // A compressed body is refused unread, however little it inflates to.
    const compressed = await fetch(`${server.url}/echo`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
      body: gzipSync(JSON.stringify({ a: 1 })),
    });
    expect(compressed.status).toBe(415);
    expect(await compressed.json()).toEqual({
      error: 'Corpo da requisição com Content-Encoding não suportado; envie-o sem compressão',
    });

    const tooDeep = await post('/echo', `${'['.repeat(33)}${']'.repeat(33)}`);
    expect(tooDeep.status).toBe(400);
    expect(await tooDeep.json()).toEqual({
      error: 'Corpo da requisição aninha objetos ou listas em mais de 32 níveis',
    });
    const deepest = await post('/echo', `${'{"a":'.repeat(32)}1${'}'.repeat(32)}`);
    expect(deepest.status).toBe(200);

    const unknown = await fetch(`${server.url}/nowhere`);
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({ error: 'Rota não encontrada' });

    const known = await fetch(`${server.url}/known`);
    expect(known.status).toBe(409);
    expect(await known.json()).toEqual({ error: 'Conflito conhecido' });
  });

  it('writes an ErrorResponse with the headers express gives a JSON answer, and none of its body to HEAD', async () => {
    const known = await fetch(`${server.url}/known`);
    const text = await known.text();
    expect(known.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(known.headers.get('content-length')).toBe(String(Buffer.byteLength(text)));
    expect(known.headers.get('x-request-id')).toBeTruthy();
    expect(known.headers.get('etag')).toBeNull();
    const unknown = await fetch(`${server.url}/nowhere`);
    expect(unknown.headers.get('content-type')).toBe('application/json; charset=utf-8');

    const head = await fetch(`${server.url}/known`, { method: 'HEAD' });
    expect(head.status).toBe(409);
    expect(head.headers.get('content-length')).toBe(String(Buffer.byteLength(text)));
    expect(await head.text()).toBe('');
  });

  it("answers a refusal through a handler's own json, so what wraps it sees the answer", async () => {
    const wrapped = await fetch(`${server.url}/wrapped`);
    expect(wrapped.status).toBe(409);
    expect(wrapped.headers.get('x-seen')).toBe('409 Conflito conhecido');
  });

  it('hides unexpected errors behind Erro interno with an error id that the log carries', async () => {
    const response = await fetch(`${server.url}/boom`);
    expect(response.status).toBe(500);
    const body = (await response.json()) as { error: string; error_id: string };
    expect(body.error).toBe('Erro interno');
    expect(JSON.stringify(body)).not.toContain('hunter2');
    const logged = lines.map((line) => JSON.parse(line)).find((entry) => entry.error_id === body.error_id);
    expect(logged?.level).toBe('error');
  });

  it('serves health, readiness that follows its checks, and Prometheus metrics', async () => {
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
    ready = false;
    const notReady = await fetch(`${server.url}/readyz`);
    expect(notReady.status).toBe(503);
    expect(await notReady.json()).toEqual({ status: 'not ready', checks: { dependency: false } });
    ready = true;
    const metrics = await fetch(`${server.url}/metrics`);
    expect(metrics.status).toBe(200);
    expect(metrics.headers.get('content-type')).toContain('text/plain');
  });

  it('logs one access line per request with a request id, and redacts credentials', async () => {
    const response = await fetch(`${server.url}/log`, {
      headers: { authorization: 'Bearer sk_live_secret', 'x-request-id': 'req-123' },
    });
    expect(response.headers.get('x-request-id')).toBe('req-123');
    const entries = lines.map((line) => JSON.parse(line));
    const access = entries.find((entry) => entry.msg === 'request' && entry.request_id === 'req-123');
    expect(access).toMatchObject({ method: 'GET', status: 200, service: 'test' });
    expect(typeof access.duration_ms).toBe('number');
    const sensitive = lines.find((line) => line.includes('"sensitive"'))!;
    expect(sensitive).not.toContain('sk_live');
    expect(sensitive).not.toContain('"t"');
    for (const leaked of ['Bearer other', 'deep-secret', 'alt-a-key', '"ct"'])
      expect(sensitive).not.toContain(leaked);
    expect(JSON.parse(sensitive)).toMatchObject({
      headers: { authorization: '[redacted]' },
      api_key: '[redacted]',
      config: '[redacted]',
    });
  });
});

describe('loadConfig', () => {
  const schema = z.object({
    PORT: z.coerce.number().int().default(8080),
    URL: z.string({ error: 'required' }),
  });
  it('parses and applies defaults', () => {
    expect(loadConfig(schema, { URL: 'x' })).toEqual({ PORT: 8080, URL: 'x' });
  });
  it('names every bad variable', () => {
    expect(() => loadConfig(schema, { PORT: 'abc' })).toThrowError(ConfigError);
    expect(() => loadConfig(schema, { PORT: 'abc' })).toThrowError(/PORT: .*\n.*URL: required/s);
  });
});
