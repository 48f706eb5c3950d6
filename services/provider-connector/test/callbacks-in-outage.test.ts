import { randomUUID } from 'node:crypto';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { setTimeout as pause } from 'node:timers/promises';
import { InProcessBus } from '@inbox/bus';
import { platformTexts, type WireEvent } from '@inbox/contracts';
import { createPool, OutboxRelay, type Pool } from '@inbox/db';
import { createLogger, type HostedService, hostService, SecretBox } from '@inbox/service-kit';
import { createDatabase, uniquePrefix, waitFor, watchedPool } from '@inbox/testkit';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { ALT_A_CALLBACK_HEADER } from '../src/adapters/alt-a.js';
import { ALT_B_CALLBACK_PARAM } from '../src/adapters/alt-b.js';
import type { InboundBatch } from '../src/adapters/channel-adapter.js';
import { defaultKeptCallbacksOptions, KeptCallbacks } from '../src/handlers/kept-callbacks.js';
import { connectorService } from '../src/service.js';
import { IntegrationStore } from '../src/store/integrations.js';
import { inboundTexts, migratedPool, zapiReceivedBody } from './support.js';

// Z-API delivers a webhook once: a callback answered with an error is lost. While Postgres cannot be
// reached (down, failing over), the connector keeps its callbacks on the bus and puts them in its inbox
// once Postgres is back.

/** A TCP link to Postgres that the test cuts (every connection dropped, new ones refused) and mends. */
async function cuttableLink(target: URL) {
  const sockets = new Set<Socket>();
  let server: Server | undefined;
  let port = 0;
  const open = async () => {
    if (server?.listening) return;
    server = createServer((client) => {
      const postgres = createConnection(Number(target.port), target.hostname);
      for (const socket of [client, postgres]) {
        sockets.add(socket);
        socket.once('close', () => sockets.delete(socket));
      }
      client.pipe(postgres).pipe(client);
      client.on('error', () => postgres.destroy());
      postgres.on('error', () => client.destroy());
    });
    await new Promise<void>((resolve) => server!.listen(port, '127.0.0.1', resolve));
    port = (server.address() as { port: number }).port;
  };
  await open();
  const link = new URL(target);
  link.hostname = '127.0.0.1';
  link.port = String(port);
  return {
    url: link.href,
    cut: async () => {
      const closed = new Promise((resolve) => server!.close(resolve));
      for (const socket of sockets) socket.destroy();
      await closed;
    },
    mend: open,
  };
}

describe.each([
  ['NATS', () => inject('infra').natsUrl],
  ['RabbitMQ', () => inject('infra').rabbitmqUrl],
])('Z-API callbacks while Postgres cannot be reached, on %s', (_broker, busUrl) => {
  const encryptionKey = SecretBox.generateKey();
  let direct: Pool;
  let link: Awaited<ReturnType<typeof cuttableLink>>;
  let connector: HostedService;

  beforeAll(async () => {
    const databaseUrl = await createDatabase(inject('infra').postgresAdminUrl);
    link = await cuttableLink(new URL(databaseUrl));
    connector = await hostService(
      connectorService({
        encryptionKey,
        publicConnectorUrl: 'http://127.0.0.1:9',
        allowedCidrs: '127.0.0.0/8',
      }),
      {
        databaseUrl: link.url,
        busUrl: busUrl(),
        busPrefix: uniquePrefix(),
        port: 0,
        host: '127.0.0.1',
        logLevel: 'silent',
      },
    );
    direct = createPool({ url: databaseUrl, schema: 'connector' });
  });
  afterAll(async () => {
    await link?.mend().catch(() => undefined);
    await connector?.stop();
    await direct?.end();
  });

  /** A Z-API integration, as the connector stores it; its callbacks carry the secret in the URL. */
  const integration = async () => {
    const store = new IntegrationStore(direct, new SecretBox(encryptionKey));
    const workspaceId = randomUUID();
    const instance = randomUUID().replaceAll('-', '').toUpperCase();
    const secret = `secret-${randomUUID()}`;
    const created = await store.create(workspaceId, {
      channel: 'alt-b',
      config: {
        base_url: 'http://127.0.0.1:9/z-api',
        instance_id: instance,
        token: `token-${randomUUID()}`,
        callback_secret: secret,
      },
      accountId: instance,
    });
    const id = created!.integration.id;
    const callback = (text: string) =>
      fetch(`${connector.http.url}/inbound/alt-b/${id}?${ALT_B_CALLBACK_PARAM}=${secret}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: zapiReceivedBody(instance, text),
      });
    return { workspaceId, callback };
  };
  /** An Evolution integration: its callbacks are recorded before they are answered. */
  const evolutionIntegration = async () => {
    const store = new IntegrationStore(direct, new SecretBox(encryptionKey));
    const workspaceId = randomUUID();
    const instance = `inst-${randomUUID()}`;
    const secret = `secret-${randomUUID()}`;
    const created = await store.create(workspaceId, {
      channel: 'alt-a',
      config: { base_url: 'http://127.0.0.1:9/evolution', instance, api_key: 'k', callback_secret: secret },
      accountId: instance,
    });
    const callback = (text: string) =>
      fetch(`${connector.http.url}/inbound/alt-a/${created!.integration.id}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', [ALT_A_CALLBACK_HEADER]: secret },
        body: JSON.stringify({
          event: 'messages.upsert',
          instance,
          apikey: null,
          data: {
            key: { remoteJid: '5511944440001@s.whatsapp.net', fromMe: false, id: randomUUID() },
            pushName: 'Ana',
            messageTimestamp: Math.floor(Date.now() / 1000),
            message: { conversation: text },
          },
        }),
      });
    return { workspaceId, callback };
  };
  const textsOf = (workspaceId: string) => inboundTexts(direct, workspaceId);

  it('answers 200, keeps the callback on the bus, and records it once Postgres is back, in its order', async () => {
    const target = await integration();
    // Evolution delivers again, but for twenty minutes only: its callbacks are kept alike.
    const evolution = await evolutionIntegration();
    expect((await evolution.callback('antes')).status).toBe(200);
    const unknown = `${connector.http.url}/inbound/alt-b/${randomUUID()}?${ALT_B_CALLBACK_PARAM}=x`;
    expect((await target.callback('antes')).status).toBe(200);
    await waitFor(async () => (await textsOf(target.workspaceId)).length === 1, { what: 'antes recorded' });

    await link.cut();
    try {
      // Past the few seconds the connector trusts what it read without asking Postgres again.
      await pause(5_500);
      expect((await target.callback('durante 1')).status).toBe(200);
      expect((await target.callback('durante 2')).status).toBe(200);
      expect((await evolution.callback('durante')).status).toBe(200);
      // Ready all along: unready, Kubernetes would send it no callback at all.
      expect((await fetch(`${connector.http.url}/readyz`)).status).toBe(200);
      // An integration it never read cannot be told apart from none: refused, as unavailable.
      const refused = await fetch(unknown, { method: 'POST', body: '{}' });
      expect(refused.status).toBe(503);
      expect(await refused.json()).toEqual({ error: platformTexts.serviceUnavailable });
      await pause(1_000);
    } finally {
      await link.mend();
    }
    await waitFor(async () => (await textsOf(target.workspaceId)).length === 3, {
      what: 'the callbacks kept on the bus recorded',
      timeoutMs: 30_000,
    });
    expect(await textsOf(target.workspaceId)).toEqual(['antes', 'durante 1', 'durante 2']);
    await waitFor(async () => (await textsOf(evolution.workspaceId)).length === 2, {
      what: 'the Evolution callback kept on the bus recorded',
    });
    expect(await textsOf(evolution.workspaceId)).toEqual(['antes', 'durante']);
    const { rows } = await direct.query('select 1 from callback_inbox');
    expect(rows).toEqual([]);
  });
});

describe('callbacks kept on the bus', () => {
  const logger = createLogger('provider-connector', { level: 'silent' });
  const batch: InboundBatch = {
    messages: [
      {
        providerMessageId: randomUUID(),
        from: '5544999999999',
        name: null,
        text: 'oi',
        type: 'text',
        sentAt: new Date(),
      },
    ],
    statuses: [],
  };
  const found = {
    workspaceId: randomUUID(),
    integration: { id: randomUUID(), channel: 'alt-b' },
    config: {},
  } as never;

  /** Workers whose Postgres refuses every connection, and what they put on an in-process bus. */
  const refusedWorkers = (busBytesPerWorkspaceHour: number) => {
    const pool = createPool({ url: 'postgres://nobody@127.0.0.1:9/none', schema: 'connector' });
    const published: WireEvent[] = [];
    const bus = new InProcessBus();
    const store = new IntegrationStore(pool, new SecretBox(SecretBox.generateKey()));
    const kept = new KeptCallbacks(
      {
        pool,
        store,
        relay: new OutboxRelay({ pool, bus, schema: 'connector' }),
        logger,
        bus: {
          publish: async (event) => {
            published.push(event);
          },
        },
      },
      { ...defaultKeptCallbacksOptions, busBytesPerWorkspaceHour },
    );
    return { kept, store, published, end: () => pool.end() };
  };

  it('tries Postgres again five seconds after a statement found it out of reach, however many callbacks skipped it meanwhile', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const workers = refusedWorkers(1e9);
    try {
      // The insert is refused: Postgres is out of reach for five seconds.
      expect(await workers.kept.keep(found, batch, 1e9)).toBe(true);
      expect(workers.store.postgresOutOfReach).toBe(true);
      vi.setSystemTime(Date.now() + 4_000);
      // Skipped, not refused: it holds Postgres out of reach no longer.
      expect(await workers.kept.keep(found, batch, 1e9)).toBe(true);
      expect(workers.published).toHaveLength(2);
      vi.setSystemTime(Date.now() + 1_500);
      expect(workers.store.postgresOutOfReach).toBe(false);
    } finally {
      vi.useRealTimers();
      await workers.end();
    }
  });

  it('skips Postgres for a moment once it was found out of reach: the integration last read answers, and callbacks go to the bus at once', async () => {
    let statements = 0;
    const pool = await migratedPool();
    const watched = watchedPool(pool, () => statements++);
    try {
      const store = new IntegrationStore(watched, new SecretBox(SecretBox.generateKey()), undefined, {
        callbackCacheMs: 0,
      });
      const workspaceId = randomUUID();
      const created = await store.create(workspaceId, {
        channel: 'alt-b',
        config: { base_url: 'http://127.0.0.1:9/z', instance_id: 'I1', token: 't', callback_secret: 's' },
        accountId: 'I1',
      });
      const id = created!.integration.id;
      expect((await store.forCallback(id)).stored?.workspaceId).toBe(workspaceId);
      expect(store.postgresOutOfReach).toBe(false);
      // A statement failed as a connection that hung would.
      expect(store.noteOutage(new Error('timeout exceeded when trying to connect'))).toBe(true);
      expect(store.noteOutage(new Error('duplicate key'))).toBe(false);
      expect(store.postgresOutOfReach).toBe(true);

      const before = statements;
      const found = await store.forCallback(id);
      expect(found.stored?.integration.id).toBe(id);
      const published: WireEvent[] = [];
      const kept = new KeptCallbacks({
        pool: watched,
        store,
        relay: new OutboxRelay({ pool: watched, bus: new InProcessBus(), schema: 'connector' }),
        logger,
        bus: { publish: async (event) => void published.push(event) },
      });
      expect(await kept.keep(found.stored!, batch, 1e9)).toBe(true);
      expect(published).toHaveLength(1);
      // Neither the lookup nor the keep asked Postgres.
      expect(statements).toBe(before);
    } finally {
      await pool.end();
    }
  });

  it('puts one workspace’s on the bus up to its bound in an hour, then refuses them (429)', async () => {
    const workers = refusedWorkers(2_000);
    try {
      expect(await workers.kept.keep(found, batch, 1e9)).toBe(true);
      expect(workers.published).toHaveLength(1);
      expect(workers.published[0]).toMatchObject({
        type: 'connector.callback.kept',
        data: { workspace_id: (found as { workspaceId: string }).workspaceId, batch: { statuses: [] } },
      });
      let refused = false;
      for (let i = 0; i < 10 && !refused; i++) refused = !(await workers.kept.keep(found, batch, 1e9));
      expect(refused).toBe(true);
      // Another workspace's still go.
      const other = { ...(found as object), workspaceId: randomUUID() } as never;
      expect(await workers.kept.keep(other, batch, 1e9)).toBe(true);
    } finally {
      await workers.end();
    }
  });
});
