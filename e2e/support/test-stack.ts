import { randomBytes } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type RunningStack, type StackConfig, startStack } from '@inbox/runtime';
import { createDatabase, freePort, uniquePrefix } from '@inbox/testkit';
import { inject } from 'vitest';
import { checkWebhook } from './openapi-contract.js';

export interface TestStack extends RunningStack {
  adminToken: string;
  databaseUrl: string;
  /** The provider connector's own address (its callbacks and the live chat widget). */
  connectorUrl: string;
  admin<T = Record<string, unknown>>(
    method: string,
    path: string,
    body?: unknown,
  ): Promise<{ status: number; body: T }>;
  api<T = Record<string, unknown>>(
    path: string,
    apiKey: string | undefined,
    body?: unknown,
  ): Promise<{ status: number; body: T }>;
}

/**
 * The broker the e2e suite runs on: the run's NATS, or its RabbitMQ with E2E_BUS=rabbitmq (to run every
 * e2e test on RabbitMQ; `npm test` runs the broker core on both either way).
 */
export function e2eBusUrl(): string {
  const { natsUrl, rabbitmqUrl } = inject('infra');
  return process.env.E2E_BUS === 'rabbitmq' ? rabbitmqUrl : natsUrl;
}

/** The distributed stack as separate processes on free ports, against the run's broker and a fresh database. */
export async function startTestStack(overrides: Partial<StackConfig> = {}): Promise<TestStack> {
  const { postgresAdminUrl, redisUrl } = inject('infra');
  const [gateway, connector, messaging, pipeline, dispatcher, sandbox] = await Promise.all(
    Array.from({ length: 6 }, () => freePort()),
  );
  const adminToken = `adm_${randomBytes(16).toString('hex')}`;
  const databaseUrl = await createDatabase(postgresAdminUrl, 'e2e');
  const stack = await startStack({
    busUrl: e2eBusUrl(),
    redisUrl,
    databaseUrl,
    busPrefix: uniquePrefix(),
    ports: {
      gateway: gateway!,
      connector: connector!,
      messaging: messaging!,
      pipeline: pipeline!,
      dispatcher: dispatcher!,
      sandbox: sandbox!,
    },
    adminToken,
    encryptionKey: randomBytes(32).toString('base64'),
    outboundAllowedCidrs: '127.0.0.0/8',
    logLevel: 'warn',
    ...overrides,
  });
  const call = async <T>(method: string, path: string, token: string | undefined, body?: unknown) => {
    const response = await fetch(`${stack.gatewayUrl}${path}`, {
      method,
      headers: {
        ...(token ? { authorization: `Bearer ${token}` } : {}),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as T };
  };
  return {
    ...stack,
    adminToken,
    databaseUrl,
    connectorUrl: `http://127.0.0.1:${connector}`,
    admin: (method, path, body) => call(method, path, adminToken, body),
    api: (path, apiKey, body) => call('POST', path, apiKey, body),
  };
}

export interface ReceivedRequest {
  /** The request's path and query, as the sender wrote it. */
  path: string;
  headers: IncomingHttpHeaders;
  rawBody: string;
  at: number;
}

/** A real HTTP receiver on loopback that records what it was sent, raw body included. */
export async function startReceiver(
  answer: (request: ReceivedRequest) => { status: number; delayMs?: number; body?: unknown } = () => ({
    status: 200,
  }),
): Promise<{ url: string; received: ReceivedRequest[]; close(): Promise<void>; server: Server }> {
  const received: ReceivedRequest[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const request = {
        path: req.url ?? '',
        headers: req.headers,
        rawBody: Buffer.concat(chunks).toString('utf8'),
        at: Date.now(),
      };
      received.push(request);
      try {
        // What the dispatcher sends always names its delivery; other callers (a fake provider) do not.
        if (req.headers['webhook-id'] !== undefined) checkWebhook(req.headers, request.rawBody);
      } catch {
        // Recorded in contractViolations: the test file fails at its end, the receiver answers as asked.
      }
      const { status, delayMs = 0, body } = answer(request);
      setTimeout(() => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body ?? { ok: true }));
      }, delayMs);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
