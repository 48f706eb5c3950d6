import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { runModuleSnippet, waitFor } from '@inbox/testkit';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import {
  AddressPolicy,
  checkUrl,
  ForbiddenAddressError,
  guardedJson,
  idleConnectionMs,
  OutboundGuard,
  OutboundTimeoutError,
  ResponseTooLargeError,
} from '../src/index.js';

interface Hit {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
  /** Whether the connection this request came on has been closed, from either side. */
  connectionClosed: () => boolean;
}

interface TestServer {
  url: string;
  port: number;
  hits: Hit[];
}

const servers: Server[] = [];

/** A real HTTP server on 127.0.0.1 that records every request and answers with `answer`. */
async function startServer(answer: (hit: Hit, res: ServerResponse) => void): Promise<TestServer> {
  const hits: Hit[] = [];
  const server = createServer((req, res) => {
    let closed = false;
    req.socket.once('close', () => {
      closed = true;
    });
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const hit = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        connectionClosed: () => closed,
      };
      hits.push(hit);
      answer(hit, res);
    });
  });
  servers.push(server);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, port, hits };
}

const guards: OutboundGuard[] = [];
function guard(allowedCidrs = '', timeoutMs = 2_000): OutboundGuard {
  const created = new OutboundGuard(AddressPolicy.fromSetting(allowedCidrs), { timeoutMs });
  guards.push(created);
  return created;
}
const loopback = () => guard('127.0.0.0/8');

/** Polls a condition for at most a second (a connection's close is seen asynchronously). */
async function eventually(condition: () => boolean): Promise<boolean> {
  const deadline = Date.now() + 1_000;
  while (!condition() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
  return condition();
}

afterEach(async () => {
  await Promise.all(guards.splice(0).map((g) => g.close()));
});
afterAll(() => {
  for (const server of servers) {
    server.closeAllConnections();
    server.close();
  }
});

describe('guardedJson', () => {
  it('sends JSON and reads the JSON answer', async () => {
    const server = await startServer((_hit, res) => {
      res.writeHead(201, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ id: 'm-1' }));
    });
    const answer = await guardedJson(loopback(), `${server.url}/send?to=a%20b&n=1`, {
      tenant: 'w1',
      method: 'POST',
      headers: { authorization: 'Bearer t' },
      body: { text: 'olá' },
    });
    expect(answer).toMatchObject({ status: 201, ok: true, body: { id: 'm-1' } });
    expect(server.hits[0]).toMatchObject({
      method: 'POST',
      url: '/send?to=a%20b&n=1',
      body: '{"text":"olá"}',
    });
    expect(server.hits[0]!.headers['content-type']).toBe('application/json');
  });

  it('never follows a redirect, so the credentials never reach the other origin', async () => {
    const other = await startServer((_hit, res) => res.end('{}'));
    const redirecting = await startServer((_hit, res) => {
      res.writeHead(302, { location: `${other.url}/steal` });
      res.end();
    });
    const answer = await guardedJson(loopback(), `${redirecting.url}/x`, {
      tenant: 'w1',
      method: 'POST',
      headers: { apikey: 'secret-key', 'client-token': 'secret-token' },
      body: {},
    });
    expect(answer.status).toBe(302);
    expect(answer.ok).toBe(false);
    expect(answer.headers.location).toBe(`${other.url}/steal`);
    expect(redirecting.hits[0]!.headers.apikey).toBe('secret-key');
    expect(other.hits).toHaveLength(0);
  });

  it('fails cleanly on an answer over the byte bound and drops the connection', async () => {
    const chunk = Buffer.alloc(16 * 1024, 'a');
    const endless = await startServer((_hit, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      // Without a length, and far more than loopback buffers hold (64 MiB at most): unless the client
      // drops the connection, this answer outlasts the test.
      let sent = 0;
      const pump = () => {
        while (sent < 4096 && !res.destroyed && res.write(chunk)) sent++;
        if (sent < 4096 && !res.destroyed) res.once('drain', pump);
        else res.end();
      };
      pump();
    });
    await expect(
      guardedJson(loopback(), endless.url, { tenant: 'w1', maxBodyBytes: 64 * 1024 }),
    ).rejects.toBeInstanceOf(ResponseTooLargeError);
    expect(await eventually(() => endless.hits[0]!.connectionClosed())).toBe(true);

    const declared = await startServer((_hit, res) => {
      res.writeHead(200, { 'content-length': String(2 * 1024 * 1024) });
      res.write(chunk);
    });
    await expect(guardedJson(loopback(), declared.url, { tenant: 'w1' })).rejects.toThrow(
      /exceeds 1048576 bytes/,
    );
    expect(await eventually(() => declared.hits[0]!.connectionClosed())).toBe(true);
  });

  it('refuses at connect time a name that resolves to a loopback address, unless allowed', async () => {
    const server = await startServer((_hit, res) => res.end('{"ok":true}'));
    const byName = `http://localhost:${server.port}/`;
    await expect(guardedJson(guard(), byName, { tenant: 'w1' })).rejects.toBeInstanceOf(
      ForbiddenAddressError,
    );
    expect(server.hits).toHaveLength(0);
    // The same call with loopback allowed reaches it (localhost may resolve to ::1 first; 127.0.0.1 is kept).
    expect((await guardedJson(loopback(), byName, { tenant: 'w1' })).body).toEqual({ ok: true });
  });

  it.each([
    '[::7f00:1]',
    '[::127.0.0.1]',
    '[64:ff9b::7f00:1]',
    '2130706433',
    '0x7f.1',
    '127.1',
    '0177.0.0.1',
    '169.254.169.254',
  ])('refuses %s before connecting', async (host) => {
    const server = await startServer((_hit, res) => res.end('{}'));
    await expect(
      guardedJson(guard(), `http://${host}:${server.port}/`, { tenant: 'w1' }),
    ).rejects.toBeInstanceOf(ForbiddenAddressError);
    expect(server.hits).toHaveLength(0);
  });

  it('bounds the whole call: a server that never answers, and one that never finishes its answer', async () => {
    const silent = await startServer(() => undefined);
    let started = Date.now();
    await expect(
      guardedJson(loopback(), silent.url, { tenant: 'w1', timeoutMs: 300 }),
    ).rejects.toBeInstanceOf(OutboundTimeoutError);
    expect(Date.now() - started).toBeLessThan(2_000);

    const trickling = await startServer((_hit, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('[');
      // One byte every 50 ms, for at most 5 s: each arrives well inside any idle timeout.
      let left = 100;
      const timer = setInterval(() => {
        if (res.destroyed || left-- === 0) {
          clearInterval(timer);
          res.end(']');
        } else res.write(' ');
      }, 50);
    });
    started = Date.now();
    await expect(guardedJson(loopback(), trickling.url, { tenant: 'w1', timeoutMs: 400 })).rejects.toThrow(
      /no complete answer .* within 400 ms/,
    );
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it("leaves the caller's own cancellation to the caller", async () => {
    const silent = await startServer(() => undefined);
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    const failure = await guardedJson(loopback(), silent.url, {
      tenant: 'w1',
      signal: controller.signal,
    }).catch((error: unknown) => error);
    expect(failure).not.toBeInstanceOf(OutboundTimeoutError);
    expect(controller.signal.aborted).toBe(true);
  });
});

describe('the undici it loads', () => {
  it("is the agent and request alone: neither undici's whole surface nor Node's bundled copy", () => {
    const entry = new URL('../src/index.ts', import.meta.url).href;
    const probe = `
      import { createRequire } from 'node:module';
      await import(${JSON.stringify(entry)});
      const cache = Object.keys(createRequire(import.meta.url).cache);
      console.log(JSON.stringify({
        index: cache.some((file) => file.endsWith('/node_modules/undici/index.js')),
        agent: cache.some((file) => file.endsWith('/undici/lib/dispatcher/agent.js')),
        bundled: process.moduleLoadList.some((name) => name.includes('deps/undici/undici')),
      }));`;
    expect(runModuleSnippet(probe)).toEqual({
      index: false,
      agent: true,
      bundled: false,
    });
  });
});

describe('checkUrl', () => {
  const strict = new AddressPolicy();

  it('keeps an idle connection no longer than its own bound, whatever the server asks for', async () => {
    const server = createServer((_req, res) => res.end('{}'));
    // Node answers `Keep-Alive: timeout=600` on every response.
    server.keepAliveTimeout = 600_000;
    servers.push(server);
    let closedAt = 0;
    server.on('connection', (socket) =>
      socket.on('close', () => {
        closedAt = Date.now();
      }),
    );
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as AddressInfo;
    const answer = await guardedJson(loopback(), `http://127.0.0.1:${port}/`, { tenant: 'w1' });
    const answeredAt = Date.now();
    expect(answer.headers['keep-alive']).toBe('timeout=600');
    await waitFor(() => closedAt > 0, { timeoutMs: idleConnectionMs + 3_000, intervalMs: 50 });
    expect(closedAt - answeredAt).toBeLessThan(idleConnectionMs + 3_000);
  });

  it('refuses a name that resolves to a private address without saying which address', async () => {
    const refusal = await checkUrl('http://localhost:8080/hook', strict, 'w1');
    expect(refusal?.text).toBe('o destino localhost aponta para um endereço não permitido');
    expect(refusal?.address).toMatch(/^(127\.0\.0\.1|::1)$/);
    expect(refusal?.text).not.toContain(refusal!.address!);
  });

  it.each([
    'http://2130706433/',
    'http://0x7f.1/',
    'http://127.1/',
    'http://[::7f00:1]/',
    'http://10.0.0.1/',
    'http://169.254.169.254/latest',
  ])('refuses %s', async (url) => {
    expect((await checkUrl(url, strict, 'w1'))?.text).toMatch(/aponta para um endereço não permitido$/);
  });

  it('accepts a public literal address and a private one that is allowed', async () => {
    expect(await checkUrl('https://8.8.8.8/', strict, 'w1')).toBeUndefined();
    expect(
      await checkUrl('http://127.0.0.1:9/', AddressPolicy.fromSetting('127.0.0.0/8'), 'w1'),
    ).toBeUndefined();
  });

  it('says when a name does not resolve', async () => {
    expect((await checkUrl('http://no-such-host.invalid/', strict, 'w1'))?.text).toBe(
      'não foi possível resolver no-such-host.invalid',
    );
  });
});
