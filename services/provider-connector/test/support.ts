import { randomUUID } from 'node:crypto';
import { createServer, type RequestListener, type Server } from 'node:http';
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
