import { randomUUID } from 'node:crypto';
import { createServer, request as httpRequest, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Pool } from '@inbox/db';
import { AddressPolicy, OutboundGuard } from '@inbox/outbound-http';
import { createLogger } from '@inbox/service-kit';
import { migratedPool as migratedDatabase } from '@inbox/testkit';
import { afterAll, beforeAll, inject } from 'vitest';
import type { ProviderCall } from '../src/adapters/channel-adapter.js';

/** A pool on a fresh database of this run's Postgres, with the connector's schema and outbox migrated. */
export const migratedPool = (options: { max?: number } = {}): Promise<Pool> =>
  migratedDatabase({
    adminUrl: inject('infra').postgresAdminUrl,
    schema: 'connector',
    migrations: new URL('../migrations', import.meta.url),
    outbox: true,
    ...options,
  });

/**
 * Providers on loopback ports for a test file: `listen` serves a handler (the sandbox's app, a stand-in
 * receiver) on a free port and closes it after the file's tests, `guard` lets the adapters call loopback
 * (made before the tests, closed after), and `call()` is one provider call's context as the handlers make
 * it.
 */
export function loopbackProviders() {
  const servers: Server[] = [];
  const logger = createLogger('provider-connector', { level: 'silent' });
  let guard: OutboundGuard | undefined;
  beforeAll(() => {
    guard = new OutboundGuard(AddressPolicy.fromSetting('127.0.0.0/8'), { timeoutMs: 5_000 });
  });
  afterAll(async () => {
    for (const server of servers) {
      server.closeAllConnections();
      server.close();
    }
    await guard?.close();
  });
  const providers = {
    logger,
    get guard(): OutboundGuard {
      if (!guard) throw new Error('the loopback guard is made in beforeAll');
      return guard;
    },
    async listen(handler: RequestListener): Promise<string> {
      const server = createServer(handler);
      servers.push(server);
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    },
    call: (): ProviderCall => ({
      guard: providers.guard,
      workspaceId: randomUUID(),
      logger,
      signal: AbortSignal.timeout(5_000),
    }),
  };
  return providers;
}

/**
 * A JSON POST whose body arrives only when `finish` is called: the connector admits it on its headers and
 * reads its body then. `answered` settles with the status once it is answered.
 */
export function slowPost(url: string, headers: Record<string, string>, body: string) {
  const request = httpRequest(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...headers },
  });
  const answered = new Promise<number>((resolve, reject) => {
    request.once('response', (response) => {
      response.resume();
      resolve(response.statusCode ?? 0);
    });
    request.once('error', reject);
  });
  request.write(body.slice(0, 10));
  request.flushHeaders();
  return {
    answered,
    finish: () => {
      request.end(body.slice(10));
      return answered;
    },
  };
}

/** A ReceivedCallback as Z-API posts it (its docs' example, webhooks/on-message-received). */
export const zapiReceivedBody = (instance: string, text: string) =>
  JSON.stringify({
    isStatusReply: false,
    isGroup: false,
    isNewsletter: false,
    instanceId: instance,
    messageId: randomUUID().replaceAll('-', '').toUpperCase(),
    phone: '5544999999999',
    fromMe: false,
    momment: Date.now(),
    status: 'RECEIVED',
    chatName: 'Maria',
    senderName: 'Maria',
    broadcast: false,
    type: 'ReceivedCallback',
    text: { message: text },
  });

/** The texts of the inbound messages a workspace's callbacks put in the outbox, in the order written. */
export const inboundTexts = async (pool: Pick<Pool, 'query'>, workspaceId: string) =>
  (
    await pool.query<{ text: string }>(
      `select data->>'text' as text from outbox
        where workspace_id = $1 and type = 'inbound.message' order by seq`,
      [workspaceId],
    )
  ).rows.map((row) => row.text);
