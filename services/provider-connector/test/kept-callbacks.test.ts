import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as pause } from 'node:timers/promises';
import { InProcessBus } from '@inbox/bus';
import { platformTexts } from '@inbox/contracts';
import { OutboxRelay, type Pool } from '@inbox/db';
import { AddressPolicy, OutboundGuard } from '@inbox/outbound-http';
import { createHttpApp, createLogger, finishHttpApp, SecretBox } from '@inbox/service-kit';
import { serveMetrics } from '@inbox/telemetry';
import { waitFor } from '@inbox/testkit';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ALT_B_CALLBACK_PARAM } from '../src/adapters/alt-b.js';
import type { InboundBatch } from '../src/adapters/channel-adapter.js';
import { type CallbackLimits, defaultCallbackLimits } from '../src/handlers/callback-admission.js';
import { inboundRoutes } from '../src/handlers/inbound.js';
import {
  defaultKeptCallbacksOptions,
  KeptCallbacks,
  type KeptCallbacksOptions,
} from '../src/handlers/kept-callbacks.js';
import { CallbackInbox } from '../src/store/callback-inbox.js';
import { IntegrationStore } from '../src/store/integrations.js';
import { inboundTexts, migratedPool, slowPost, zapiReceivedBody } from './support.js';

// Z-API documents no redelivery of a webhook it could not deliver: every callback the connector does not
// answer 2xx in time is lost. Its callbacks are kept as read, answered at once, and recorded by workers.

const logLines: Array<Record<string, unknown>> = [];
const logger = createLogger('provider-connector', {
  level: 'warn',
  destination: { write: (line: string) => logLines.push(JSON.parse(line) as Record<string, unknown>) },
});

let pool: Pool;
const servers: Server[] = [];
const workers: KeptCallbacks[] = [];
// Providers here are on loopback; a silent one holds its calls for up to 10 s.
const guard = new OutboundGuard(AddressPolicy.fromSetting('127.0.0.0/8'), { timeoutMs: 10_000 });
beforeAll(async () => {
  pool = await migratedPool();
});
afterEach(async () => {
  // A test that makes the outbox refuse a text takes the refusal down with it.
  await pool.query('alter table outbox drop constraint if exists refuses_recusado');
});
afterAll(async () => {
  for (const server of servers) {
    server.closeAllConnections();
    server.close();
  }
  for (const worker of workers) await worker.stop();
  await guard.close();
  await pool?.end();
});

/** Makes Postgres refuse to record an inbound message whose text is "recusado", as a failing database would. */
const refuseRecusado = () =>
  pool.query(
    `alter table outbox add constraint refuses_recusado check (data->>'text' is distinct from 'recusado') not valid`,
  );

/** The connector's inbound routes and kept-callback workers on a loopback port, as the service mounts them. */
async function startConnector(
  limits: Partial<CallbackLimits> = {},
  options: Partial<KeptCallbacksOptions> = {},
) {
  const store = new IntegrationStore(pool, new SecretBox(SecretBox.generateKey()));
  // Not started: the events stay in the outbox, where the test reads them.
  const relay = new OutboxRelay({ pool, bus: new InProcessBus(), schema: 'connector' });
  const fetching = { guard, providerTimeoutMs: 10_000 };
  const kept = new KeptCallbacks(
    { pool, store, relay, logger, fetching },
    { ...defaultKeptCallbacksOptions, ...options },
  );
  workers.push(kept);
  const app = createHttpApp({ logger, parseJson: false });
  app.use(
    inboundRoutes({
      pool,
      store,
      relay,
      logger,
      limits: { ...defaultCallbackLimits, ...limits },
      fetching,
      kept,
    }),
  );
  finishHttpApp(app, logger);
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  servers.push(server);
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  /** A Z-API integration; its callbacks carry the secret in the URL, as the connector registers it. */
  const integration = async (workspaceId = randomUUID()) => {
    const instance = randomUUID().replaceAll('-', '').toUpperCase();
    const secret = `secret-${randomUUID()}`;
    const created = await store.create(workspaceId, {
      channel: 'alt-b',
      config: {
        base_url: `http://127.0.0.1:9/z-${randomUUID().slice(0, 8)}`,
        instance_id: instance,
        token: `token-${randomUUID()}`,
        callback_secret: secret,
      },
      accountId: instance,
    });
    return { id: created!.integration.id, workspaceId, instance, secret };
  };
  type Target = Awaited<ReturnType<typeof integration>>;
  const receivedBody = (target: Target, text: string) => zapiReceivedBody(target.instance, text);
  const callbackUrl = (target: Target) =>
    `${url}/inbound/alt-b/${target.id}?${ALT_B_CALLBACK_PARAM}=${target.secret}`;
  const callback = (target: Target, text: string) =>
    fetch(callbackUrl(target), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: receivedBody(target, text),
    });
  /** A callback whose body arrives only when `finish` is called: admitted now, read then. */
  const slowCallback = (target: Target, text: string) =>
    slowPost(callbackUrl(target), {}, receivedBody(target, text));
  /**
   * A Mercado Livre integration whose API is at `baseUrl`, and a notification of a buyer's question as ML
   * posts it (unsigned: it names the application and the seller).
   */
  const marketIntegration = async (baseUrl: string) => {
    const workspaceId = randomUUID();
    const config = {
      base_url: baseUrl,
      seller_id: '123456789',
      access_token: 'APP_USR-access',
      refresh_token: 'TG-refresh',
      client_id: '5503910054141466',
      client_secret: 'secret',
    };
    const created = await store.create(workspaceId, {
      channel: 'market',
      config,
      accountId: config.seller_id,
    });
    const notify = (question: number) =>
      fetch(`${url}/inbound/market/${created!.integration.id}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          _id: randomUUID(),
          resource: `/questions/${question}`,
          user_id: Number(config.seller_id),
          topic: 'questions',
          application_id: Number(config.client_id),
          attempts: 1,
          sent: new Date().toISOString(),
          received: new Date().toISOString(),
        }),
      });
    return { workspaceId, notify };
  };
  return { kept, integration, callback, slowCallback, marketIntegration };
}

const textsOf = (workspaceId: string) => inboundTexts(pool, workspaceId);

const keptOf = async (workspaceId: string) =>
  (
    await pool.query<{ attempts: number; due_later: boolean }>(
      `select attempts, due_at > now() as due_later from callback_inbox where workspace_id = $1 order by id`,
      [workspaceId],
    )
  ).rows;

const usageOf = async (workspaceId: string) =>
  Number(
    (
      await pool.query<{ bytes: string }>('select bytes from callback_inbox_usage where workspace_id = $1', [
        workspaceId,
      ])
    ).rows[0]?.bytes ?? 0,
  );

/** A batch as an adapter reads it: one customer's message saying `text`, and a status. */
const batchOf = (text: string): InboundBatch => ({
  messages: [
    {
      providerMessageId: randomUUID(),
      from: '5544999999999',
      name: null,
      text,
      type: 'text',
      sentAt: new Date('2026-12-02T10:00:00.000Z'),
    },
  ],
  statuses: [{ providerMessageId: 'p', status: 'read', error: null, at: new Date(0) }],
});

/** The connector's gauges as Prometheus scrapes them, by series name. */
async function scrapedGauges(): Promise<Map<string, number>> {
  const server = createServer(serveMetrics);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const { port } = server.address() as AddressInfo;
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    return new Map(
      text
        .split('\n')
        .filter((line) => line.startsWith('connector_kept_callbacks_'))
        .map((line) => [line.split(/[{ ]/)[0]!, Number(line.split(' ').at(-1))]),
    );
  } finally {
    server.close();
  }
}

/** Makes every postponed callback due now, as its backoff's end would. */
const backoffOver = () => pool.query('update callback_inbox set due_at = now()');

describe('kept callbacks (Z-API)', () => {
  it('answers a callback once kept and records it, then forgets it and its weight', async () => {
    const connector = await startConnector();
    const target = await connector.integration();
    expect((await connector.callback(target, 'oi')).status).toBe(200);
    await connector.kept.drain();
    expect(await textsOf(target.workspaceId)).toEqual(['oi']);
    expect(await keptOf(target.workspaceId)).toEqual([]);
    expect(await usageOf(target.workspaceId)).toBe(0);
  });

  it('answers 200 to a callback Postgres will not record now, and records it once it does, holding back none after it', async () => {
    const connector = await startConnector();
    const target = await connector.integration();
    await refuseRecusado();
    expect((await connector.callback(target, 'recusado')).status).toBe(200);
    expect((await connector.callback(target, 'depois')).status).toBe(200);
    await connector.kept.drain();
    // The one after it is recorded; the refused one waits its backoff, kept.
    expect(await textsOf(target.workspaceId)).toEqual(['depois']);
    expect(await keptOf(target.workspaceId)).toEqual([{ attempts: 1, due_later: true }]);
    expect(logLines).toContainEqual(
      expect.objectContaining({
        msg: 'kept callback not recorded: tried again later',
        integration_id: target.id,
        attempts: 1,
        retry_in_ms: 1_000,
      }),
    );
    await pool.query('alter table outbox drop constraint refuses_recusado');
    await backoffOver();
    await connector.kept.drain();
    expect(await textsOf(target.workspaceId)).toEqual(['depois', 'recusado']);
    expect(await keptOf(target.workspaceId)).toEqual([]);
    expect(await usageOf(target.workspaceId)).toBe(0);
  });

  it('keeps a callback admitted before others put its budgets in debt, where a redelivering provider’s is refused', async () => {
    const connector = await startConnector({ workspacePerSecond: 5, workspaceBurst: 10, bytesPerItem: 1024 });
    const first = await connector.integration();
    const other = await connector.integration(first.workspaceId);
    // Admitted, its body still arriving, when another callback of the workspace charges some twenty items.
    const slow = await connector.slowCallback(first, 'devagar');
    await pause(200);
    expect((await connector.callback(other, 'x'.repeat(20_000))).status).toBe(200);
    expect(await slow.finish()).toBe(200);
    await connector.kept.drain();
    expect((await textsOf(first.workspaceId)).map((text) => text.slice(0, 8))).toEqual(
      expect.arrayContaining(['devagar', 'xxxxxxxx']),
    );
  });

  it('refuses with 429 once its workspace’s kept callbacks weigh their bound, others’ still kept, and keeps again once they are recorded', async () => {
    const connector = await startConnector({ keptBytesPerWorkspace: 600 });
    const crowded = await connector.integration();
    const elsewhere = await connector.integration();
    await refuseRecusado();
    const answers: number[] = [];
    for (let i = 0; i < 6; i++) answers.push((await connector.callback(crowded, 'recusado')).status);
    await connector.kept.drain();
    // Some hundreds of bytes each as read: a few fit.
    const fitted = answers.filter((status) => status === 200).length;
    expect(fitted).toBeGreaterThan(0);
    expect(fitted).toBeLessThan(6);
    expect(answers).toEqual([...Array(fitted).fill(200), ...Array(6 - fitted).fill(429)]);
    expect(await keptOf(crowded.workspaceId)).toHaveLength(fitted);
    const refused = await connector.callback(crowded, 'cheio');
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('30');
    expect(await refused.json()).toEqual({ error: platformTexts.callbacksTooMany });
    expect((await connector.callback(elsewhere, 'oi')).status).toBe(200);

    await pool.query('alter table outbox drop constraint refuses_recusado');
    await backoffOver();
    await connector.kept.drain();
    expect(await textsOf(crowded.workspaceId)).toEqual(Array(fitted).fill('recusado'));
    expect(await usageOf(crowded.workspaceId)).toBe(0);
    expect((await connector.callback(crowded, 'de novo')).status).toBe(200);
    await connector.kept.drain();
    expect(await textsOf(crowded.workspaceId)).toContain('de novo');
  });

  it('reports the backlog: how many kept callbacks wait, what they weigh, and how long the oldest has', async () => {
    const connector = await startConnector();
    const inbox = new CallbackInbox(pool);
    const before = await inbox.backlog();
    const target = await connector.integration();
    await refuseRecusado();
    for (const text of ['recusado', 'recusado'])
      expect((await connector.callback(target, text)).status).toBe(200);
    await connector.kept.drain();
    await pool.query(
      `update callback_inbox set received_at = now() - interval '1 hour'
        where id = (select min(id) from callback_inbox where workspace_id = $1)`,
      [target.workspaceId],
    );
    await connector.kept.refreshBacklog();
    const gauges = await scrapedGauges();
    expect(gauges.get('connector_kept_callbacks_backlog')).toBe(before.callbacks + 2);
    expect(gauges.get('connector_kept_callbacks_backlog_bytes')).toBe(
      before.bytes + (await usageOf(target.workspaceId)),
    );
    expect(await usageOf(target.workspaceId)).toBeGreaterThan(0);
    expect(gauges.get('connector_kept_callbacks_oldest_age')).toBeGreaterThanOrEqual(3_600);

    await pool.query('alter table outbox drop constraint refuses_recusado');
    await backoffOver();
    await connector.kept.drain();
    await connector.kept.refreshBacklog();
    const after = await scrapedGauges();
    expect(after.get('connector_kept_callbacks_backlog')).toBe(before.callbacks);
    expect(after.get('connector_kept_callbacks_backlog_bytes')).toBe(before.bytes);
    expect(after.get('connector_kept_callbacks_oldest_age')).toBeLessThan(3_600);
  });

  it('gives up a callback it could not record within keepForMs, and says so', async () => {
    const connector = await startConnector({}, { keepForMs: 0 });
    const target = await connector.integration();
    await refuseRecusado();
    expect((await connector.callback(target, 'recusado')).status).toBe(200);
    await connector.kept.drain();
    expect(await keptOf(target.workspaceId)).toEqual([]);
    expect(await usageOf(target.workspaceId)).toBe(0);
    expect(await textsOf(target.workspaceId)).toEqual([]);
    expect(logLines).toContainEqual(
      expect.objectContaining({
        level: 'error',
        msg: 'kept callback given up: it could not be recorded in time',
        integration_id: target.id,
        attempts: 1,
      }),
    );
  });

  it('counts a callback’s day of retries from when it reached the inbox: one kept on the bus through a long outage is not given up at its first failure', async () => {
    const connector = await startConnector();
    const target = await connector.integration();
    await refuseRecusado();
    await connector.kept.takeFromBus({
      workspace_id: target.workspaceId,
      integration_id: target.id,
      batch: JSON.parse(JSON.stringify(batchOf('recusado'))),
      trace_context: {},
      received_at: new Date(Date.now() - 25 * 3_600_000).toISOString(),
    });
    await connector.kept.drain();
    expect(await keptOf(target.workspaceId)).toEqual([{ attempts: 1, due_later: true }]);
    await pool.query('alter table outbox drop constraint refuses_recusado');
    await backoffOver();
    await connector.kept.drain();
    expect(await textsOf(target.workspaceId)).toEqual(['recusado']);
  });

  it('stops only once the callback being recorded is, and gives the rest of its round back to be taken at once', async () => {
    const connector = await startConnector({}, { lanes: 1 });
    const target = await connector.integration();
    const inbox = new CallbackInbox(pool);
    for (const text of ['primeiro', 'segundo', 'terceiro'])
      await inbox.keep(target.workspaceId, target.id, batchOf(text), {}, 1e6);
    // The outbox takes no row until the lock is let go: the first callback's recording waits on it.
    const locker = await pool.connect();
    await locker.query('begin');
    await locker.query('lock table outbox in share row exclusive mode');
    connector.kept.wake();
    await waitFor(async () => (await keptOf(target.workspaceId)).every((row) => row.attempts === 1));
    let stopped = false;
    const stopping = connector.kept.stop().then(() => {
      stopped = true;
    });
    await pause(200);
    expect(stopped).toBe(false);
    await locker.query('commit');
    locker.release();
    await stopping;
    expect(await textsOf(target.workspaceId)).toEqual(['primeiro']);
    expect(await keptOf(target.workspaceId)).toEqual([
      { attempts: 1, due_later: false },
      { attempts: 1, due_later: false },
    ]);
    const { rows } = await pool.query<{ leased: boolean }>(
      'select leased_until > now() as leased from callback_inbox where workspace_id = $1',
      [target.workspaceId],
    );
    expect(rows.map((row) => row.leased)).toEqual([false, false]);
  });

  it('gives a workspace whose provider keeps silent one lane, and records the others’ callbacks meanwhile', async () => {
    // Mercado Livre as a tenant's base URL may make it: it takes every call and never answers.
    let calls = 0;
    const silent = createServer(() => {
      calls++;
    });
    servers.push(silent);
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const silentUrl = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
    const connector = await startConnector();
    const stalled = await connector.marketIntegration(silentUrl);
    const stalledToo = await connector.marketIntegration(silentUrl);
    for (const question of [13000000001, 13000000002])
      expect((await stalled.notify(question)).status).toBe(200);
    expect((await stalledToo.notify(13000000003)).status).toBe(200);
    await waitFor(() => calls >= 2, { what: 'both silent workspaces called' });
    const other = await connector.integration();
    expect((await connector.callback(other, 'oi')).status).toBe(200);
    await waitFor(async () => (await textsOf(other.workspaceId)).length === 1, {
      timeoutMs: 3_000,
      what: "the other workspace's callback recorded while the silent provider holds its calls",
    });
    // One lane per silent workspace: its second notification waits behind its first.
    expect(calls).toBe(2);
    expect(await keptOf(stalled.workspaceId)).toHaveLength(2);
  });

  it('drops, and counts out, the callbacks of an integration deleted before they were recorded', async () => {
    const connector = await startConnector();
    const target = await connector.integration();
    const inbox = new CallbackInbox(pool);
    await inbox.keep(target.workspaceId, randomUUID(), { messages: [], statuses: [] }, {}, 1e6);
    await connector.kept.drain();
    expect(await keptOf(target.workspaceId)).toEqual([]);
    expect(await usageOf(target.workspaceId)).toBe(0);
  });
});

describe('the callback inbox', () => {
  const inbox = () => new CallbackInbox(pool);
  const keepSome = async (workspaceId: string, integrationId: string, count: number) => {
    for (let i = 0; i < count; i++)
      expect(await inbox().keep(workspaceId, integrationId, batchOf(`m${i}`), {}, 1e9)).toBe(true);
  };
  // Each test's rows only: the inbox is shared by the file's tests.
  const mine = <T extends { workspaceId: string }>(leased: T[], ...workspaces: string[]) =>
    leased.filter((kept) => workspaces.includes(kept.workspaceId));
  afterEach(() => pool.query('delete from callback_inbox'));

  it('gives back a kept batch as it was read, times included', async () => {
    const workspace = randomUUID();
    const kept = batchOf('oi');
    await inbox().keep(workspace, randomUUID(), kept, {}, 1e9);
    const [leased] = mine(await inbox().lease({ round: 100, perIntegration: 5, leaseMs: 60_000 }), workspace);
    expect(leased!.batch).toEqual(kept);
    expect(leased!.attempts).toBe(1);
  });

  it('shares a round out among workspaces in turns, however long one’s backlog', async () => {
    const [busy, quiet] = [randomUUID(), randomUUID()];
    const busyIntegrations = [randomUUID(), randomUUID(), randomUUID()];
    for (const integration of busyIntegrations) await keepSome(busy, integration, 30);
    await keepSome(quiet, randomUUID(), 1);
    const round = mine(await inbox().lease({ round: 4, perIntegration: 20, leaseMs: 60_000 }), busy, quiet);
    expect(round).toHaveLength(4);
    expect(round.filter((kept) => kept.workspaceId === quiet)).toHaveLength(1);
  });

  it('leases none of an integration whose callbacks another worker holds, and each one’s in order', async () => {
    const [workspace, integration] = [randomUUID(), randomUUID()];
    await keepSome(workspace, integration, 5);
    const first = mine(await inbox().lease({ round: 100, perIntegration: 2, leaseMs: 60_000 }), workspace);
    expect(first.map((kept) => kept.batch.messages[0]!.text)).toEqual(['m0', 'm1']);
    expect(mine(await inbox().lease({ round: 100, perIntegration: 2, leaseMs: 60_000 }), workspace)).toEqual(
      [],
    );
    for (const kept of first) await inbox().finish(kept.id);
    const next = mine(await inbox().lease({ round: 100, perIntegration: 2, leaseMs: 60_000 }), workspace);
    expect(next.map((kept) => kept.batch.messages[0]!.text)).toEqual(['m2', 'm3']);
  });

  it('leases an integration’s callbacks in the order they came, one kept late (from the bus) in its place', async () => {
    const [workspace, integration] = [randomUUID(), randomUUID()];
    await keepSome(workspace, integration, 2);
    const cameEarlier = new Date(Date.now() - 60_000);
    expect(await inbox().keep(workspace, integration, batchOf('antes'), {}, 1e9, cameEarlier)).toBe(true);
    const round = mine(await inbox().lease({ round: 100, perIntegration: 2, leaseMs: 60_000 }), workspace);
    expect(round.map((kept) => kept.batch.messages[0]!.text)).toEqual(['antes', 'm0']);
    expect(round[0]!.receivedAt).toEqual(cameEarlier);
  });

  it('leases none of a workspace its worker is recording for already', async () => {
    const [busy, free] = [randomUUID(), randomUUID()];
    await keepSome(busy, randomUUID(), 1);
    await keepSome(free, randomUUID(), 1);
    const round = mine(
      await inbox().lease({ round: 10, perIntegration: 1, leaseMs: 60_000, busyWorkspaces: [busy] }),
      busy,
      free,
    );
    expect(round.map((kept) => kept.workspaceId)).toEqual([free]);
  });

  it('leases again, to another worker, a callback whose lease ended unfinished', async () => {
    const [workspace, integration] = [randomUUID(), randomUUID()];
    await keepSome(workspace, integration, 1);
    expect(mine(await inbox().lease({ round: 10, perIntegration: 1, leaseMs: 1 }), workspace)).toHaveLength(
      1,
    );
    await pause(20);
    const [again] = mine(await inbox().lease({ round: 10, perIntegration: 1, leaseMs: 60_000 }), workspace);
    expect(again!.attempts).toBe(2);
  });

  it('holds a postponed callback back without holding the integration’s next', async () => {
    const [workspace, integration] = [randomUUID(), randomUUID()];
    await keepSome(workspace, integration, 2);
    const [failed] = mine(await inbox().lease({ round: 10, perIntegration: 1, leaseMs: 60_000 }), workspace);
    await inbox().postpone(failed!.id, 60_000);
    const [next] = mine(await inbox().lease({ round: 10, perIntegration: 1, leaseMs: 60_000 }), workspace);
    expect(next!.batch.messages[0]!.text).toBe('m1');
  });
});
