import { createHmac, randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as pause } from 'node:timers/promises';
import { gzipSync } from 'node:zlib';
import { InProcessBus } from '@inbox/bus';
import { platformTexts } from '@inbox/contracts';
import { maxEventBytes, OutboxRelay, type Pool, type PoolClient } from '@inbox/db';
import { createHttpApp, createLogger, finishHttpApp, SecretBox } from '@inbox/service-kit';
import { waitFor } from '@inbox/testkit';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ALT_A_CALLBACK_HEADER } from '../src/adapters/alt-a.js';
import { type CallbackLimits, defaultCallbackLimits } from '../src/handlers/callback-admission.js';
import { inboundRoutes } from '../src/handlers/inbound.js';
import { KeptCallbacks } from '../src/handlers/kept-callbacks.js';
import { IntegrationStore } from '../src/store/integrations.js';
import { migratedPool, slowPost } from './support.js';

/** Counts decrypts, to see how often a callback costs one. */
class CountingSecretBox extends SecretBox {
  opened = 0;
  override open(sealed: string, context: string): string {
    this.opened++;
    return super.open(sealed, context);
  }
}

const logLines: Array<Record<string, unknown>> = [];
const logger = createLogger('provider-connector', {
  level: 'warn',
  destination: { write: (line: string) => logLines.push(JSON.parse(line) as Record<string, unknown>) },
});

let pool: Pool;
const servers: Server[] = [];
beforeAll(async () => {
  pool = await migratedPool();
});
afterAll(async () => {
  for (const server of servers) {
    server.closeAllConnections();
    server.close();
  }
  await pool?.end();
});

/** The connector's inbound routes on a loopback port, as the service mounts them. */
async function startConnector(limits: Partial<CallbackLimits> = {}) {
  const secrets = new CountingSecretBox(SecretBox.generateKey());
  const store = new IntegrationStore(pool, secrets);
  // Not started: the events stay in the outbox, where the test reads them.
  const relay = new OutboxRelay({ pool, bus: new InProcessBus(), schema: 'connector' });
  const app = createHttpApp({ logger, parseJson: false });
  // One rate for every channel unless a test gives a channel its own, so that the limits a test sets
  // are those its Cloud API batches meet.
  app.use(
    inboundRoutes({
      pool,
      store,
      relay,
      logger,
      limits: { ...defaultCallbackLimits, channelRates: {}, ...limits },
      kept: new KeptCallbacks({ pool, store, relay, logger }),
    }),
  );
  finishHttpApp(app, logger);
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  servers.push(server);
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  // Each on an Evolution server of its own, all naming their instance `inst`: a workspace connects an
  // instance of one server once.
  const integration = async (workspaceId = randomUUID()) => {
    const apiKey = `key-${randomUUID()}`;
    const secret = `secret-${randomUUID()}`;
    const created = await store.create(workspaceId, {
      channel: 'alt-a',
      config: {
        base_url: `http://127.0.0.1:9/evolution-${randomUUID().slice(0, 8)}`,
        instance: 'inst',
        api_key: apiKey,
        callback_secret: secret,
      },
      accountId: 'inst',
    });
    return { id: created!.integration.id, workspaceId, secret };
  };
  // As Evolution posts them: the secret in the header its webhook was set with, `apikey` null. `from`: the
  // client an ingress in front of the connector names in X-Forwarded-For.
  const callback = (
    target: { id: string; secret: string },
    message: { id?: string; text?: string; name?: string; timestamp?: number } = {},
    from?: string,
  ) =>
    fetch(`${url}/inbound/alt-a/${target.id}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        [ALT_A_CALLBACK_HEADER]: target.secret,
        ...(from ? { 'x-forwarded-for': from } : {}),
      },
      body: JSON.stringify({
        event: 'messages.upsert',
        instance: 'inst',
        apikey: null,
        data: {
          key: { remoteJid: '5511944440001@s.whatsapp.net', fromMe: false, id: message.id ?? randomUUID() },
          pushName: message.name ?? null,
          messageTimestamp: message.timestamp,
          message: { conversation: message.text ?? 'oi' },
        },
      }),
    });
  /** A Cloud API integration, whose callbacks batch many messages in one body, signed by its app secret. */
  const officialIntegration = async () => {
    const workspaceId = randomUUID();
    const appSecret = `app-${randomUUID()}`;
    const created = await store.create(workspaceId, {
      channel: 'chat-official',
      config: {
        base_url: 'https://graph.facebook.com',
        phone_number_id: '1',
        waba_id: '2',
        access_token: 'a',
        app_secret: appSecret,
        verify_token: 'v',
      },
      accountId: randomUUID(),
    });
    return { id: created!.integration.id, workspaceId, appSecret };
  };
  /** `edit` changes the messages before they are signed; `statuses` go beside them. */
  const batchCallback = (
    target: { id: string; appSecret: string },
    messages: number,
    {
      edit,
      statuses,
    }: { edit?: (messages: Array<Record<string, unknown>>) => void; statuses?: unknown[] } = {},
  ) => {
    const listed: Array<Record<string, unknown>> = Array.from({ length: messages }, (_, i) => ({
      from: '5511944440001',
      id: `wamid.${randomUUID()}`,
      timestamp: String(1_700_000_000 + i),
      type: 'text',
      text: { body: `m${i}` },
    }));
    edit?.(listed);
    const body = JSON.stringify({
      object: 'whatsapp_business_account',
      entry: [
        {
          id: '2',
          changes: [
            {
              field: 'messages',
              value: {
                messaging_product: 'whatsapp',
                metadata: { phone_number_id: '1' },
                messages: listed,
                ...(statuses ? { statuses } : {}),
              },
            },
          ],
        },
      ],
    });
    return fetch(`${url}/inbound/chat-official/${target.id}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-hub-signature-256': `sha256=${createHmac('sha256', target.appSecret).update(body).digest('hex')}`,
      },
      body,
    });
  };
  /** A callback whose body arrives only when `finish` is called: its reading holds its turn meanwhile. */
  const slowCallback = async (target: { id: string; secret: string }) => {
    const body = JSON.stringify({
      event: 'messages.upsert',
      instance: 'inst',
      apikey: null,
      data: {
        key: { remoteJid: '5511944440001@s.whatsapp.net', fromMe: false, id: randomUUID() },
        message: { conversation: 'devagar' },
      },
    });
    return slowPost(`${url}/inbound/alt-a/${target.id}`, { [ALT_A_CALLBACK_HEADER]: target.secret }, body);
  };
  return { url, store, secrets, integration, callback, officialIntegration, batchCallback, slowCallback };
}

async function eventsOf(workspaceId: string) {
  const { rows } = await pool.query<{ data: Record<string, unknown>; bytes: number }>(
    `select data, octet_length(data::text) as bytes from outbox
      where workspace_id = $1 and type = 'inbound.message' order by seq`,
    [workspaceId],
  );
  return rows;
}

describe('inbound callbacks', () => {
  it('takes a 1 MiB message in cut to its bounds, storable, with a record of the cut', async () => {
    const connector = await startConnector();
    const target = await connector.integration();
    const longId = `ID-${'9'.repeat(400)}`;
    const answer = await connector.callback(target, {
      id: longId,
      text: `começo\u0000${'x'.repeat(1_000_000)}`,
      name: `Nome\u0000${'n'.repeat(5_000)}`,
      timestamp: 1e20,
    });
    expect(answer.status).toBe(200);
    const [event] = await eventsOf(target.workspaceId);
    expect(event!.bytes).toBeLessThan(maxEventBytes);
    expect(event!.data).toMatchObject({ truncated: true, from: '+5511944440001' });
    expect((event!.data.text as string).length).toBe(16_384);
    expect((event!.data.text as string).startsWith('começo\uFFFDx')).toBe(true);
    expect((event!.data.name as string).length).toBe(256);
    expect(event!.data.provider_message_id).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(Number.isNaN(Date.parse(event!.data.sent_at as string))).toBe(false);
    // Its cuts on one line for the callback.
    const cuts = logLines.filter((line) => line.msg === 'inbound message fields cut to the connector bounds');
    expect(cuts).toEqual([
      expect.objectContaining({
        integration_id: target.id,
        count: 2,
        examples: expect.arrayContaining([
          expect.objectContaining({ field: 'text', original_length: 1_000_007 }),
        ]),
      }),
    ]);

    // The provider delivering the same callback again is taken in once: the shortened id is stable.
    expect((await connector.callback(target, { id: longId, text: 'de novo' })).status).toBe(200);
    expect(await eventsOf(target.workspaceId)).toHaveLength(1);
  });

  it("refuses a disconnected integration's callback without reading its body", async () => {
    const connector = await startConnector();
    const target = await connector.integration();
    expect((await connector.callback(target)).status).toBe(200);
    await connector.store.setStatus(target.workspaceId, target.id, 'disconnected');
    // Larger than the body limit: a 413 would mean the body was read before the integration was judged.
    const answer = await fetch(`${connector.url}/inbound/alt-a/${target.id}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: 'x'.repeat(2 * 1024 * 1024),
    });
    expect(answer.status).toBe(404);
    expect(await answer.json()).toEqual({ error: 'integração desconhecida' });
    expect((await connector.callback(target)).status).toBe(404);
    expect(await eventsOf(target.workspaceId)).toHaveLength(1);
  });

  it('answers 429 with Retry-After to a flood on one integration while serving another', async () => {
    const connector = await startConnector({ perSecond: 5, burst: 10 });
    const flooding = await connector.integration();
    const quiet = await connector.integration();
    const answers = await Promise.all(Array.from({ length: 25 }, () => connector.callback(flooding)));
    const statuses = answers.map((answer) => answer.status);
    expect(statuses.filter((status) => status === 200).length).toBeLessThanOrEqual(20);
    expect(statuses).toContain(429);
    const refused = answers.find((answer) => answer.status === 429)!;
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect((await connector.callback(quiet)).status).toBe(200);
  });

  it("takes a Cloud API number's campaign of statuses, past what another channel's integration may send", async () => {
    const connector = await startConnector({ channelRates: defaultCallbackLimits.channelRates });
    const official = await connector.officialIntegration();
    const statuses: number[] = [];
    // 300 callbacks within a second or two: past the 200 an integration may send at once by default.
    for (let round = 0; round < 6; round++) {
      const answers = await Promise.all(
        Array.from({ length: 50 }, () => connector.batchCallback(official, 1)),
      );
      statuses.push(...answers.map((answer) => answer.status));
    }
    expect(statuses.filter((status) => status !== 200)).toEqual([]);
  });

  it("gives a Cloud API integration the rate of Meta's throughput, where another channel's is refused", async () => {
    const connector = await startConnector({
      perSecond: 5,
      burst: 10,
      channelRates: { 'chat-official': { perSecond: 40, burst: 40 } },
    });
    const evolution = await connector.integration();
    const official = await connector.officialIntegration();
    const evolutionAnswers = await Promise.all(
      Array.from({ length: 25 }, () => connector.callback(evolution)),
    );
    expect(evolutionAnswers.map((answer) => answer.status)).toContain(429);
    const officialAnswers = await Promise.all(
      Array.from({ length: 25 }, () => connector.batchCallback(official, 1)),
    );
    expect(officialAnswers.map((answer) => answer.status)).toEqual(Array(25).fill(200));
  });

  it('records a callback of many messages a hundred per transaction, each in a few statements, each message once', async () => {
    const connector = await startConnector();
    const target = await connector.officialIntegration();
    // The integration known, so that what follows takes connections for its transactions only.
    expect((await connector.batchCallback(target, 1)).status).toBe(200);
    const connect = pool.connect.bind(pool);
    // Statements each transaction ran, begin and commit included.
    const transactions: number[] = [];
    pool.connect = (async () => {
      const client = await connect();
      const n = transactions.push(0) - 1;
      const query = client.query.bind(client);
      return Object.assign(Object.create(client) as PoolClient, {
        query: (...args: unknown[]) => {
          transactions[n]!++;
          return (query as (...a: unknown[]) => unknown)(...args);
        },
      });
    }) as unknown as Pool['connect'];
    const statuses = Array.from({ length: 60 }, (_, i) => ({
      id: `wamid.sent-${i}`,
      status: 'delivered',
      timestamp: '1700000000',
      recipient_id: '5511944440001',
    }));
    try {
      const answer = await connector.batchCallback(target, 250, {
        statuses,
        // A message repeated within the callback is taken once.
        edit: (messages) => messages.push({ ...messages[0]! }),
      });
      expect(answer.status).toBe(200);
    } finally {
      pool.connect = connect;
    }
    // 311 items: a hundred, a hundred, a hundred (50 messages and 50 statuses), eleven statuses.
    expect(transactions).toHaveLength(4);
    for (const statements of transactions) expect(statements).toBeLessThanOrEqual(6);
    const { rows } = await pool.query<{ type: string; n: number }>(
      'select type, count(*)::int as n from outbox where workspace_id = $1 group by type order by type',
      [target.workspaceId],
    );
    expect(rows).toEqual([
      { type: 'inbound.message', n: 251 },
      { type: 'inbound.status', n: 60 },
    ]);
  });

  it('names our message in every status of a callback about a send whose answer was lost, not only the first', async () => {
    const connector = await startConnector();
    const target = await connector.officialIntegration();
    // A send of unknown outcome: its provider call never reported back, so it has no provider id.
    const messageId = randomUUID();
    await pool.query('insert into sends (message_id, workspace_id, integration_id) values ($1, $2, $3)', [
      messageId,
      target.workspaceId,
      target.id,
    ]);
    const status = (value: string, extra: Record<string, unknown> = {}) => ({
      id: 'wamid.lost-answer',
      status: value,
      timestamp: '1700000000',
      recipient_id: '5511944440001',
      biz_opaque_callback_data: messageId,
      ...extra,
    });
    const answer = await connector.batchCallback(target, 0, {
      statuses: [
        status('sent'),
        status('failed', { errors: [{ code: 131026, title: 'Message undeliverable' }] }),
      ],
    });
    expect(answer.status).toBe(200);
    const { rows } = await pool.query<{ data: { status: string; message_id: string | null } }>(
      `select data from outbox where workspace_id = $1 and type = 'inbound.status' order by seq`,
      [target.workspaceId],
    );
    expect(rows.map((row) => [row.data.status, row.data.message_id])).toEqual([
      ['sent', messageId],
      ['failed', messageId],
    ]);
    const sends = await pool.query('select provider_message_id from sends where message_id = $1', [
      messageId,
    ]);
    expect(sends.rows).toEqual([{ provider_message_id: 'wamid.lost-answer' }]);
  });

  it("charges a callback's every message to its integration's budget, and no other integration's", async () => {
    const connector = await startConnector({ perSecond: 5, burst: 10 });
    const batching = await connector.officialIntegration();
    const other = await connector.officialIntegration();
    // Taken whole, however many it carries.
    expect((await connector.batchCallback(batching, 30)).status).toBe(200);
    expect(await eventsOf(batching.workspaceId)).toHaveLength(30);
    // Thirty callbacks' worth spent: the next waits its turn, another integration's does not.
    const next = await connector.batchCallback(batching, 1);
    expect(next.status).toBe(429);
    expect(Number(next.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect((await connector.batchCallback(other, 1)).status).toBe(200);
  });

  it("carries what a callback's items spend beyond the window as a debt, paid at the integration's rate", async () => {
    const connector = await startConnector({ perSecond: 5, burst: 10 });
    const batching = await connector.officialIntegration();
    expect((await connector.batchCallback(batching, 30)).status).toBe(200);
    // Twenty items beyond a window of ten: four seconds at five a second, not the window's two.
    const next = await connector.batchCallback(batching, 1);
    expect(next.status).toBe(429);
    expect(Number(next.headers.get('retry-after'))).toBeGreaterThanOrEqual(4);
  });

  it('gives a workspace one budget for all its integrations, not one per integration it creates', async () => {
    const connector = await startConnector({ workspacePerSecond: 5, workspaceBurst: 10 });
    const first = await connector.integration();
    const second = await connector.integration(first.workspaceId);
    const other = await connector.integration();
    const statuses: number[] = [];
    for (let i = 0; i < 10; i++) statuses.push((await connector.callback(i % 2 ? first : second)).status);
    expect(statuses).toEqual(Array(10).fill(200));
    const third = await connector.integration(first.workspaceId);
    const refused = await connector.callback(third);
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect((await connector.callback(other)).status).toBe(200);
  });

  it('leaves out, unseen, what messaging could not read, and takes the rest of the callback in', async () => {
    const connector = await startConnector();
    const target = await connector.officialIntegration();
    let misread = '';
    const answer = await connector.batchCallback(target, 3, {
      edit: (messages) => {
        messages[0]!.id = '';
        // A sender that is no phone number.
        messages[1]!.from = '12';
        misread = String(messages[1]!.id);
      },
      statuses: [{ id: '', status: 'delivered', timestamp: '1700000000', recipient_id: '5511944440001' }],
    });
    expect(answer.status).toBe(200);
    expect((await eventsOf(target.workspaceId)).map((event) => event.data.text)).toEqual(['m2']);
    const { rows } = await pool.query(
      "select 1 from outbox where workspace_id = $1 and type = 'inbound.status'",
      [target.workspaceId],
    );
    expect(rows).toHaveLength(0);
    // One line for the callback, not one per item.
    const lines = logLines.filter((line) => line.workspace_id === target.workspaceId);
    expect(lines.map((line) => line.msg)).toEqual(['inbound messages not taken in']);
    expect(lines[0]).toMatchObject({ count: 3 });
    expect(lines[0]!.examples).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ reason: expect.stringMatching(/^not an event messaging reads: from /) }),
      ]),
    );
    // Not taken in as seen: the same message, readable this time, is taken in.
    const again = await connector.batchCallback(target, 1, {
      edit: (messages) => {
        messages[0]!.id = misread;
      },
    });
    expect(again.status).toBe(200);
    expect(await eventsOf(target.workspaceId)).toHaveLength(2);
  });

  it('takes a business-scoped user id in whole, and leaves out one too long to be one rather than cut it', async () => {
    const connector = await startConnector();
    const target = await connector.officialIntegration();
    // Meta's form: a country prefix, then up to 128 characters.
    const longest = `BR.${'7'.repeat(128)}`;
    const tooLong = `BR.${'7'.repeat(300)}`;
    const answer = await connector.batchCallback(target, 2, {
      edit: (messages) => {
        messages.forEach((message, i) => {
          delete message.from;
          message.from_user_id = i === 0 ? longest : tooLong;
        });
      },
    });
    expect(answer.status).toBe(200);
    const taken = await eventsOf(target.workspaceId);
    expect(taken.map((event) => [event.data.from, event.data.from_user_id])).toEqual([[null, longest]]);
    const lines = logLines.filter((line) => line.workspace_id === target.workspaceId);
    expect(lines.map((line) => line.msg)).toEqual(['inbound messages not taken in']);
    expect(lines[0]).toMatchObject({ count: 1 });
  });

  it("logs a message it cannot take in on one line cut to its bounds, whatever the caller's id", async () => {
    const connector = await startConnector();
    const target = await connector.integration();
    const hugeId = 'x'.repeat(900_000);
    // A chat that names neither a phone number nor a LID: alt-a reports it, and nothing is taken in.
    const answer = await fetch(`${connector.url}/inbound/alt-a/${target.id}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', [ALT_A_CALLBACK_HEADER]: target.secret },
      body: JSON.stringify({
        event: 'messages.upsert',
        instance: 'inst',
        data: {
          key: { remoteJid: 'someone@lid', fromMe: false, id: hugeId },
          message: { conversation: 'oi' },
        },
      }),
    });
    expect(answer.status).toBe(200);
    expect(await eventsOf(target.workspaceId)).toHaveLength(0);
    const lines = logLines.filter((line) => line.integration_id === target.id);
    expect(lines.map((line) => line.msg)).toEqual(['inbound messages not taken in']);
    expect(lines[0]).toMatchObject({ count: 1, workspace_id: target.workspaceId });
    const [example] = lines[0]!.examples as Array<{ provider_message_id: string; reason: string }>;
    expect(example!.provider_message_id).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(example!.reason).toMatch(/LID/);
    expect(JSON.stringify(lines[0]).length).toBeLessThan(2_000);
  });

  /**
   * A Cloud API integration (a window of 10 callbacks) whose workspace's one turn is held by another
   * integration's callback, its body still arriving.
   */
  async function turnHeld() {
    const connector = await startConnector({ perSecond: 5, burst: 10, perWorkspaceInFlight: 1 });
    const batching = await connector.officialIntegration();
    const slow = await connector.slowCallback(await connector.integration(batching.workspaceId));
    await pause(200);
    return { connector, batching, slow };
  }

  it('refuses, once read, a callback whose budget others put in debt since it was admitted, and records none of it', async () => {
    const connector = await startConnector({ workspacePerSecond: 5, workspaceBurst: 10 });
    const batching = await connector.officialIntegration();
    // Admitted, its body still arriving, when another callback of the workspace charges thirty items.
    const slow = await connector.slowCallback(await connector.integration(batching.workspaceId));
    await pause(200);
    expect((await connector.batchCallback(batching, 30)).status).toBe(200);
    expect(await slow.finish()).toBe(429);
    expect(await eventsOf(batching.workspaceId)).toHaveLength(30);
  });

  it('takes a callback whose own body put its budget in debt', async () => {
    const connector = await startConnector({ workspacePerSecond: 5, workspaceBurst: 10, bytesPerItem: 1024 });
    const batching = await connector.officialIntegration();
    // Some twenty items' worth of body, one message.
    const answer = await connector.batchCallback(batching, 1, {
      edit: (messages) => {
        messages[0]!.text = { body: 'x'.repeat(20_000) };
      },
    });
    expect(answer.status).toBe(200);
    expect(await eventsOf(batching.workspaceId)).toHaveLength(1);
  });

  it('takes a callback that waited for its turn only if what was taken meanwhile left its budget out of debt', async () => {
    const { connector, batching, slow } = await turnHeld();
    // Both admitted within the budget, and waiting for the turn: thirty items, then one.
    const big = connector.batchCallback(batching, 30);
    await pause(200);
    const after = connector.batchCallback(batching, 1);
    await pause(200);
    expect(await slow.finish()).toBe(200);
    expect((await big).status).toBe(200);
    const refused = await after;
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(await eventsOf(batching.workspaceId)).toHaveLength(31);
  });

  it('takes the callbacks that waited for their turn when the one refused after them only went past the window', async () => {
    const { connector, batching, slow } = await turnHeld();
    // The integration's whole window admitted, one message each, all waiting for the turn.
    const waiting = Array.from({ length: 10 }, () => connector.batchCallback(batching, 1));
    await pause(300);
    // One more is refused: it owes nothing, and neither do the ones before it.
    expect((await connector.batchCallback(batching, 1)).status).toBe(429);
    expect(await slow.finish()).toBe(200);
    expect((await Promise.all(waiting)).map((answer) => answer.status)).toEqual(Array(10).fill(200));
  });

  it('refuses a callback carrying more items than any provider batches, and charges them', async () => {
    const connector = await startConnector({ perSecond: 5, burst: 10, itemsPerCallback: 20 });
    const batching = await connector.officialIntegration();
    const refused = await connector.batchCallback(batching, 21);
    expect(refused.status).toBe(413);
    expect(await refused.json()).toEqual({ error: platformTexts.callbackTooManyItems(20) });
    expect(await eventsOf(batching.workspaceId)).toHaveLength(0);
    expect((await connector.batchCallback(batching, 1)).status).toBe(429);
  });

  it('reads a body as large as its provider may post: 3 MiB from the Cloud API, 1 MiB from the others', async () => {
    const connector = await startConnector();
    // Two and a half mebibytes of messages, as a busy number's batch can be ("up to 3MB", Meta says).
    const official = await connector.officialIntegration();
    const large = await connector.batchCallback(official, 50, {
      edit: (messages) => {
        for (const message of messages) (message.text as { body: string }).body = 'x'.repeat(52_000);
      },
    });
    expect([large.status, await large.text()]).toEqual([200, '{"ok":true}']);
    expect(await eventsOf(official.workspaceId)).toHaveLength(50);
    const over = await connector.batchCallback(official, 1, {
      edit: (messages) => {
        messages[0]!.padding = 'x'.repeat(3 * 1024 * 1024);
      },
    });
    expect(over.status).toBe(413);
    const other = await connector.integration();
    const answer = await fetch(`${connector.url}/inbound/alt-a/${other.id}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', [ALT_A_CALLBACK_HEADER]: other.secret },
      body: JSON.stringify({ padding: 'x'.repeat(1024 * 1024) }),
    });
    expect(answer.status).toBe(413);
  });

  it("charges a callback's body by its size, before it is verified, as it does its items", async () => {
    const connector = await startConnector({ perSecond: 5, burst: 10, bytesPerItem: 1024 });
    // One message, in 20 KiB of body: twenty items' worth, past the window of ten.
    const padded = await connector.officialIntegration();
    const heavy = await connector.batchCallback(padded, 1, {
      edit: (messages) => {
        messages[0]!.padding = 'x'.repeat(20_000);
      },
    });
    expect(heavy.status).toBe(200);
    expect((await connector.batchCallback(padded, 1)).status).toBe(429);
    // A body refused for its signature has cost its reading and verifying just the same.
    const forged = await connector.integration();
    const refused = await fetch(`${connector.url}/inbound/alt-a/${forged.id}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', [ALT_A_CALLBACK_HEADER]: 'not-the-secret' },
      body: JSON.stringify({ event: 'messages.upsert', padding: 'x'.repeat(20_000) }),
    });
    expect(refused.status).toBe(401);
    expect((await connector.callback(forged)).status).toBe(429);
  });

  it('charges a compressed callback by the size it inflates to, and refuses an encoding it cannot read', async () => {
    const connector = await startConnector({ perSecond: 5, burst: 10, bytesPerItem: 1024 });
    const target = await connector.integration();
    // 200 KB of JSON, a few hundred bytes once gzipped: two hundred items' worth.
    const body = gzipSync(JSON.stringify({ event: 'messages.upsert', padding: ' '.repeat(200_000) }));
    expect(body.length).toBeLessThan(1_000);
    const post = (encoding: string) =>
      fetch(`${connector.url}/inbound/alt-a/${target.id}`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'content-encoding': encoding,
          [ALT_A_CALLBACK_HEADER]: target.secret,
        },
        body,
      });
    expect((await post('gzip')).status).toBeLessThan(500);
    expect((await connector.callback(target)).status).toBe(429);
    const other = await startConnector();
    const unreadable = await fetch(`${other.url}/inbound/alt-a/${(await other.integration()).id}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-encoding': 'zstd' },
      body,
    });
    expect(unreadable.status).toBe(415);
    expect(await unreadable.json()).toEqual({ error: platformTexts.bodyEncodingUnsupported });
  });

  it("reads no more of one workspace's callbacks at once than its turns, and serves other workspaces meanwhile", async () => {
    const connector = await startConnector({ perWorkspaceInFlight: 1, perWorkspaceWaiting: 1 });
    const busy = await connector.integration();
    const sibling = await connector.integration(busy.workspaceId);
    const other = await connector.integration();
    // The workspace's one turn, held while the body trickles in.
    const reading = await connector.slowCallback(busy);
    await new Promise((resolve) => setTimeout(resolve, 100));
    // Another of its integrations' callbacks waits for the turn; one more than may wait is refused.
    const waiting = connector.callback(sibling);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect((await connector.callback(sibling)).status).toBe(429);
    // Another workspace's callback is not held back.
    expect((await connector.callback(other)).status).toBe(200);
    expect(await reading.finish()).toBe(200);
    expect((await waiting).status).toBe(200);
    await waitFor(async () => (await eventsOf(busy.workspaceId)).length === 2, { what: 'both recorded' });
  });

  it('costs one lookup and one decrypt per integration for a burst of callbacks', async () => {
    const connector = await startConnector();
    const target = await connector.integration();
    const before = connector.secrets.opened;
    const answers = await Promise.all(Array.from({ length: 20 }, () => connector.callback(target)));
    expect(answers.map((answer) => answer.status)).toEqual(Array(20).fill(200));
    expect(connector.secrets.opened - before).toBe(1);
  });

  it('refuses for a while what an address that keeps naming unknown integrations would cost, not known ones', async () => {
    const connector = await startConnector({ unknownPerWindow: 5 });
    const known = await connector.integration();
    // The same removed integration called again and again is remembered: it costs nothing and counts once.
    const removed = randomUUID();
    for (let i = 0; i < 10; i++) {
      expect((await connector.callback({ id: removed, secret: 'k' })).status).toBe(404);
    }
    expect((await connector.callback(known)).status).toBe(200);
    const sprayed: number[] = [];
    for (let i = 0; i < 4; i++)
      sprayed.push((await connector.callback({ id: randomUUID(), secret: 'k' })).status);
    // A path that names no integration costs no lookup, and does not count.
    sprayed.push((await fetch(`${connector.url}/inbound/alt-a/not-an-id`, { method: 'POST' })).status);
    sprayed.push((await connector.callback({ id: randomUUID(), secret: 'k' })).status);
    sprayed.push((await connector.callback({ id: randomUUID(), secret: 'k' })).status);
    expect(sprayed).toEqual([404, 404, 404, 404, 404, 404, 429]);
    const refused = await connector.callback({ id: randomUUID(), secret: 'k' });
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(1);
    // Providers call from shared addresses: an integration this process knows is still served from one.
    expect((await connector.callback(known)).status).toBe(200);
  });

  it('blocks no address for paths that name no integration, which a tenant can point its provider at', async () => {
    const connector = await startConnector({ unknownPerWindow: 5 });
    for (let i = 0; i < 60; i++) {
      const path = i % 2 === 0 ? `alt-a/not-an-id-${i}` : `no-such-channel/${randomUUID()}`;
      expect((await fetch(`${connector.url}/inbound/${path}`, { method: 'POST' })).status).toBe(404);
    }
    // An integration never served before, from the same address: a lookup, not refused.
    expect((await connector.callback(await connector.integration())).status).toBe(200);
  });

  it('serves a blocked address the integrations it served lately, past the seconds their rows are trusted', async () => {
    const connector = await startConnector({ unknownPerWindow: 5 });
    const known = await connector.integration();
    expect((await connector.callback(known)).status).toBe(200);
    for (let i = 0; i < 6; i++) await connector.callback({ id: randomUUID(), secret: 'k' });
    expect((await connector.callback({ id: randomUUID(), secret: 'k' })).status).toBe(429);
    const fresh = await connector.integration();
    // Ten minutes on: the integration's row is no longer trusted (5 s), the address still blocked (the
    // limiter's own timers run in real time).
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.now() + 10 * 60_000);
    try {
      expect((await connector.callback(known, { id: 'later' })).status).toBe(200);
      expect((await connector.callback(fresh)).status).toBe(429);
    } finally {
      vi.useRealTimers();
    }
  });

  it('behind an ingress, refuses the client that names unknown integrations, not everyone the ingress forwards', async () => {
    // Every request reaches the connector from the ingress's address (here loopback), the client named in
    // X-Forwarded-For.
    const connector = await startConnector({ unknownPerWindow: 5 });
    const sprayer = '203.0.113.9';
    const sprayed: number[] = [];
    for (let i = 0; i < 7; i++)
      sprayed.push((await connector.callback({ id: randomUUID(), secret: 'k' }, {}, sprayer)).status);
    expect(sprayed).toEqual([404, 404, 404, 404, 404, 404, 429]);
    // An integration this process has not looked up yet costs a lookup: refused to the sprayer, served to
    // a provider calling through the same ingress.
    const fresh = await connector.integration();
    expect((await connector.callback(fresh, {}, sprayer)).status).toBe(429);
    expect((await connector.callback(fresh, {}, '198.51.100.7')).status).toBe(200);
  });
});
