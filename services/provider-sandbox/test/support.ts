import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, beforeEach } from 'vitest';
import { createSandbox, type Sandbox, type SandboxOptions } from '../src/index.js';

export function listen(sandbox: Sandbox): Promise<{ server: Server; url: string }> {
  return new Promise((resolve) => {
    const server = sandbox.app.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      resolve({ server, url: `http://127.0.0.1:${port}` });
    });
  });
}

export function close(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve, reject) => server.close((error) => (error ? reject(error) : resolve())));
}

export interface ReceivedCall {
  method: string;
  /** Path and query, as the receiver saw them. */
  url: string;
  headers: IncomingHttpHeaders;
  /**
   * The exact bytes received, as text, so a signature can be checked over them; inflated first when
   * they came gzipped, as the connector's body parser inflates them.
   */
  rawBody: string;
}

/** How the receiver answers Meta's `hub.challenge` handshake. */
export type HandshakeAnswer = 'echo' | 'wrong-body' | 'forbidden';

export interface Receiver {
  server: Server;
  url: string;
  calls: ReceivedCall[];
  /** The POSTs only (webhooks), without the handshake GETs. */
  posts(): ReceivedCall[];
  handshake: HandshakeAnswer;
  /** What the next webhooks are answered, one each, before the receiver goes back to 200. */
  answers: Array<number | { status: number; headers: Record<string, string> }>;
}

/**
 * A stand-in for the connector: records every call, answers the verification handshake as told, and
 * answers webhooks with 200.
 */
export function startReceiver(): Promise<Receiver> {
  const calls: ReceivedCall[] = [];
  const receiver: Omit<Receiver, 'server' | 'url'> = {
    calls,
    posts: () => calls.filter((call) => call.method === 'POST'),
    handshake: 'echo',
    answers: [],
  };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      calls.push({
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        rawBody: (req.headers['content-encoding'] === 'gzip'
          ? gunzipSync(Buffer.concat(chunks))
          : Buffer.concat(chunks)
        ).toString('utf8'),
      });
      if (req.method === 'GET') {
        const challenge = new URL(req.url ?? '/', 'http://receiver').searchParams.get('hub.challenge') ?? '';
        if (receiver.handshake === 'forbidden') res.writeHead(403).end('forbidden');
        else res.writeHead(200).end(receiver.handshake === 'echo' ? challenge : `${challenge}x`);
        return;
      }
      const answer = receiver.answers.shift() ?? 200;
      if (typeof answer === 'number') res.writeHead(answer).end();
      else res.writeHead(answer.status, answer.headers).end();
    });
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      resolve(Object.assign(receiver, { server, url: `http://127.0.0.1:${port}` }));
    });
  });
}

export function postJson(
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
  init: RequestInit = {},
): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    ...init,
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

/**
 * A sandbox that takes http callbacks (the receiver is plain http, where the real providers want https)
 * and a receiver, both listening for the enclosing describe and reset before each of its tests. Read
 * `base` and `receiver` once they have started (in hooks and tests).
 */
export function sandboxAndReceiver(options: Omit<SandboxOptions, 'httpCallbacks'> = {}): {
  sandbox: Sandbox;
  readonly base: string;
  readonly receiver: Receiver;
} {
  const sandbox = createSandbox({ ...options, httpCallbacks: 'allow' });
  let server: Server | undefined;
  let base = '';
  let receiver: Receiver | undefined;
  beforeAll(async () => {
    ({ server, url: base } = await listen(sandbox));
    receiver = await startReceiver();
  });
  afterAll(async () => {
    if (server) await close(server);
    if (receiver) await close(receiver.server);
  });
  beforeEach(() => {
    sandbox.reset();
    receiver!.calls.length = 0;
    receiver!.handshake = 'echo';
    receiver!.answers.length = 0;
  });
  return {
    sandbox,
    get base() {
      return base;
    },
    get receiver() {
      return receiver!;
    },
  };
}
