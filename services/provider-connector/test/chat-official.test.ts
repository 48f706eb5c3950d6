import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { InProcessBus } from '@inbox/bus';
import { type AppError, integrationsPerWorkspace, platformTexts } from '@inbox/contracts';
import { OutboxRelay, type Pool } from '@inbox/db';
import { AddressPolicy, OutboundGuard } from '@inbox/outbound-http';
import { createSandbox, type Sandbox } from '@inbox/provider-sandbox';
import { createHttpApp, createLogger, finishHttpApp, SecretBox } from '@inbox/service-kit';
import { waitFor } from '@inbox/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inboundRoutes } from '../src/handlers/inbound.js';
import { createIntegration } from '../src/handlers/integrations.js';
import { KeptCallbacks } from '../src/handlers/kept-callbacks.js';
import { sendText } from '../src/handlers/send-text.js';
import { IntegrationStore } from '../src/store/integrations.js';
import { migratedPool } from './support.js';

const logger = createLogger('provider-connector', { level: 'silent' });
const closers: Array<() => Promise<void>> = [];
let pool: Pool;

beforeAll(async () => {
  pool = await migratedPool();
});
afterAll(async () => {
  for (const close of closers.reverse()) await close();
  await pool?.end();
});

async function serve(app: { listen: Sandbox['app']['listen'] }): Promise<string> {
  const server: Server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  closers.push(async () => {
    server.closeAllConnections();
    server.close();
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** The sandbox (Meta's Cloud API) and the connector's inbound routes, each on its own loopback port. */
async function startWorld(options: { httpCallbacks?: 'allow' | 'refuse'; publicConnectorUrl?: string } = {}) {
  const sandbox = createSandbox({ httpCallbacks: options.httpCallbacks ?? 'allow' });
  const sandboxUrl = await serve(sandbox.app);
  const store = new IntegrationStore(pool, new SecretBox(SecretBox.generateKey()));
  // Not started: the events stay in the outbox, where the test reads them.
  const relay = new OutboxRelay({ pool, bus: new InProcessBus(), schema: 'connector' });
  const app = createHttpApp({ logger, parseJson: false });
  app.use(
    inboundRoutes({ pool, store, relay, logger, kept: new KeptCallbacks({ pool, store, relay, logger }) }),
  );
  finishHttpApp(app, logger);
  const connectorUrl = await serve(app);
  const guard = new OutboundGuard(AddressPolicy.fromSetting('127.0.0.0/8'), { timeoutMs: 5_000 });
  closers.push(() => guard.close());
  const deps = {
    store,
    guard,
    logger,
    publicConnectorUrl: options.publicConnectorUrl ?? connectorUrl,
    providerTimeoutMs: 8_000,
  };
  const control = async (path: string, body: unknown) => {
    const res = await fetch(`${sandboxUrl}/_sandbox${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  const sent = async () =>
    (await (await fetch(`${sandboxUrl}/_sandbox/sent?channel=chat-official`)).json()) as unknown[];

  const create = async (account = `pn-${randomUUID().slice(0, 8)}`, workspaceId = randomUUID()) => {
    const config = {
      base_url: `${sandboxUrl}/chat-official`,
      phone_number_id: account,
      // The number's WABA as the sandbox places it unless told otherwise.
      waba_id: `waba-${account}`,
      access_token: `token-${account}`,
      app_secret: `secret-${account}`,
      verify_token: `verify-${account}`,
    };
    const integration = await createIntegration(deps, {
      workspace_id: workspaceId,
      channel: 'chat-official',
      config,
    });
    return { workspaceId, config, integration };
  };
  const send = (target: Awaited<ReturnType<typeof create>>, to = '+5511944440001', text = 'Olá') =>
    sendText(deps, {
      workspace_id: target.workspaceId,
      integration_id: target.integration.id,
      message_id: randomUUID(),
      to,
      text,
    });
  const events = async (workspaceId: string, type: 'inbound.message' | 'inbound.status') => {
    const { rows } = await pool.query<{ data: Record<string, unknown> }>(
      'select data from outbox where workspace_id = $1 and type = $2 order by seq',
      [workspaceId, type],
    );
    return rows.map((row) => row.data);
  };
  return { sandbox, sandboxUrl, store, deps, control, sent, create, send, events };
}

const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => {
      throw new Error('expected a failure');
    },
    (error: unknown) => error as AppError,
  );

/** A creation the provider refused the credentials of: the caller's 400, and nothing kept. */
async function refusedAsCredentials(creation: Promise<unknown>, account: string) {
  const refused = await failure(creation);
  expect(refused.status).toBe(400);
  expect(refused.body).toEqual({
    error:
      'O provedor do canal "chat-official" recusou as credenciais da integração ou não conhece a conta: verifique a configuração',
  });
  const { rows } = await pool.query('select 1 from integrations where account_id = $1', [account]);
  expect(rows).toHaveLength(0);
}

describe('chat-official registration', () => {
  it('subscribes the app to the WABA before overriding the callback, and says what Meta would refuse', async () => {
    const world = await startWorld();
    const { integration, config } = await world.create();
    // The sandbox refuses an override before the subscription, so connected means both happened.
    expect(integration).toMatchObject({ status: 'connected', status_reason: null });
    const apps = (await (
      await fetch(`${world.sandboxUrl}/chat-official/v21.0/${config.waba_id}/subscribed_apps`, {
        headers: { authorization: `Bearer ${config.access_token}` },
      })
    ).json()) as { data: unknown[] };
    expect(apps.data).toHaveLength(1);
    // A local connector on http: this sandbox takes it, Meta would not, and the answer says so.
    expect(integration.warnings).toEqual([
      expect.stringMatching(
        /^O provedor aceitou o webhook de entrada, mas o provedor real do canal "chat-official" o recusaria: a URL de callback http:\/\/127\.0\.0\.1:\d+\/inbound\/chat-official\/[0-9a-f-]{36} usa http, e o provedor só aceita https; ajuste PUBLIC_CONNECTOR_URL$/,
      ),
    ]);
  });

  it('names the http callback a provider that keeps to Meta refused, and keeps nothing', async () => {
    const world = await startWorld({ httpCallbacks: 'refuse' });
    const count = async () =>
      (await pool.query<{ n: number }>('select count(*)::int as n from integrations')).rows[0]!.n;
    const before = await count();
    const refused = await failure(world.create());
    expect(refused.status).toBe(502);
    expect(refused.body.error).toMatch(
      /^Falha ao registrar o webhook de entrada no provedor do canal "chat-official": a URL de callback http:\/\/\S+ usa http, e o provedor só aceita https; ajuste PUBLIC_CONNECTOR_URL$/,
    );
    expect(await count()).toBe(before);
  });

  it("does not blame the callback URL when Meta refused the WABA subscription itself: the token is the caller's to fix", async () => {
    const world = await startWorld({ httpCallbacks: 'refuse' });
    const account = `pn-${randomUUID().slice(0, 8)}`;
    // The WABA already answers to another token: ours is refused (190) before any callback is looked at.
    const other = await fetch(`${world.sandboxUrl}/chat-official/v21.0/waba-${account}/subscribed_apps`, {
      headers: { authorization: 'Bearer token-of-someone-else' },
    });
    expect(other.status).toBe(200);
    await refusedAsCredentials(world.create(account), account);
  });

  it("refuses an app secret that is not the app's at creation, by Graph's appsecret_proof check", async () => {
    const world = await startWorld();
    const account = `pn-${randomUUID().slice(0, 8)}`;
    // The app's secret is not the one the integration will be given (pasted from another app).
    await world.control('/chat-official/app-secret', { account, app_secret: 'the-real-app-secret' });
    await refusedAsCredentials(world.create(account), account);
  });

  it('works with an app that has "Require App Secret" on: every call carries the proof', async () => {
    const world = await startWorld();
    const account = `pn-${randomUUID().slice(0, 8)}`;
    await world.control('/chat-official/app-secret', {
      account,
      app_secret: `secret-${account}`,
      require_proof: true,
    });
    const target = await world.create(account);
    expect(target.integration).toMatchObject({ status: 'connected' });
    await world.control('/windows', {
      channel: 'chat-official',
      account,
      number: '5511944440001',
      last_inbound_at: new Date().toISOString(),
    });
    expect((await world.send(target)).provider_message_id).toMatch(/^wamid\./);
  });

  it('refuses an integration past the workspace limit, naming it, and counts no other workspace', async () => {
    const world = await startWorld();
    const crowded = randomUUID();
    const add = (i: number) =>
      world.store.create(crowded, {
        channel: 'alt-a',
        config: { base_url: 'https://evolution.example.com', instance: `i${i}`, api_key: 'k' },
        accountId: `i${i}`,
      });
    for (let i = 0; i < integrationsPerWorkspace - 5; i++) await add(i);
    // Ten at once for the last five places (on connections already open, so that they do meet): five
    // are created, however they interleave.
    await Promise.all(Array.from({ length: 10 }, () => pool.query('select pg_sleep(0.05)')));
    const last = await Promise.all(Array.from({ length: 10 }, (_, i) => add(1_000 + i)));
    expect(last.filter((created) => created !== undefined)).toHaveLength(5);
    const account = `pn-${randomUUID().slice(0, 8)}`;
    const refused = await failure(world.create(account, crowded));
    expect(refused).toMatchObject({
      status: 400,
      body: { error: platformTexts.integrationLimitReached(integrationsPerWorkspace) },
    });
    expect(refused.body.error).toBe('limite de 100 integrações por workspace atingido');
    const { rows } = await pool.query('select 1 from integrations where workspace_id = $1', [crowded]);
    expect(rows).toHaveLength(integrationsPerWorkspace);
    // Nothing was asked of the provider for the refused one.
    const apps = (await (
      await fetch(`${world.sandboxUrl}/chat-official/v21.0/waba-${account}/subscribed_apps`, {
        headers: { authorization: `Bearer token-${account}` },
      })
    ).json()) as { data: unknown[] };
    expect(apps.data).toHaveLength(0);
    expect((await world.create()).integration).toMatchObject({ status: 'connected' });
  });

  it('names a callback URL over 200 characters', async () => {
    // Refused for its length before Meta would even try to reach it.
    const host = ['a', 'b', 'c'].map((label) => label.repeat(60)).join('.');
    const world = await startWorld({ publicConnectorUrl: `https://${host}.test` });
    const refused = await failure(world.create());
    expect(refused).toMatchObject({ status: 502 });
    expect(refused.body.error).toMatch(
      /^Falha ao registrar o webhook de entrada no provedor do canal "chat-official": a URL de callback tem 2\d\d caracteres, e o provedor aceita no máximo 200; ajuste PUBLIC_CONNECTOR_URL$/,
    );
  });
});

describe('chat-official sends', () => {
  it('sends again after the throughput limit (130429), and tells the caller of the pair limit (131056)', async () => {
    const world = await startWorld();
    const target = await world.create();
    await world.control('/windows', {
      channel: 'chat-official',
      account: target.config.phone_number_id,
      number: '5511944440001',
      last_inbound_at: new Date().toISOString(),
    });
    await world.control('/chat-official/throttle', { account: target.config.phone_number_id, code: 130429 });
    const sent = await world.send(target);
    expect(sent.provider_message_id).toMatch(/^wamid\./);
    expect(await world.sent()).toHaveLength(1);

    await world.control('/chat-official/throttle', { account: target.config.phone_number_id, code: 131056 });
    const limited = await failure(world.send(target));
    expect(limited).toMatchObject({
      status: 502,
      body: {
        error:
          'O provedor do canal "chat-official" limitou os envios (muitas mensagens em pouco tempo): tente novamente em alguns segundos',
        meta_error_code: 131056,
      },
    });
    expect(await world.sent()).toHaveLength(1);
  });

  it('disconnects the integration when Meta refuses its token (190), and still takes its callbacks', async () => {
    const world = await startWorld();
    const target = await world.create();
    await world.control('/chat-official/token', { account: target.config.phone_number_id, state: 'expired' });
    const refused = await failure(world.send(target));
    expect(refused).toMatchObject({
      status: 502,
      body: {
        error:
          'O provedor do canal "chat-official" recusou as credenciais da integração (token expirado ou revogado, chave errada ou conta removida): a integração foi desconectada até que sejam corrigidas',
        meta_error_code: 190,
      },
    });
    const stored = await world.store.get(target.workspaceId, target.integration.id);
    expect(stored?.integration).toMatchObject({
      status: 'disconnected',
      status_reason: 'credentials_rejected',
    });
    // The next send does not reach the provider at all.
    expect(await failure(world.send(target))).toMatchObject({
      status: 400,
      body: { error: 'Integração não está conectada' },
    });

    // Customers keep writing, and Meta keeps delivering: their messages are not lost meanwhile.
    const inbound = await world.control('/inbound', {
      channel: 'chat-official',
      account: target.config.phone_number_id,
      from: '5511944440002',
      text: 'ainda aí?',
      app_secret: target.config.app_secret,
    });
    expect(inbound.body.delivered_status).toBe(200);
    expect(await world.events(target.workspaceId, 'inbound.message')).toHaveLength(1);

    // An operator's disconnect, on the other hand, stops them.
    await world.store.setStatus(target.workspaceId, target.integration.id, 'disconnected');
    const afterOperator = await world.control('/chat-official/redeliver', {
      account: target.config.phone_number_id,
    });
    expect(afterOperator.body.delivered_status).toBe(404);
  });
});

describe('chat-official sends with an app secret reset at Meta', () => {
  it('disconnects the integration once Graph refuses its appsecret_proof (100), naming no token', async () => {
    const world = await startWorld();
    const target = await world.create();
    // The app's secret was reset at Meta and our config still has the old one.
    await world.control('/chat-official/app-secret', {
      account: target.config.phone_number_id,
      app_secret: 'reset-at-meta',
    });
    expect(await failure(world.send(target))).toMatchObject({
      status: 502,
      body: {
        error: platformTexts.providerCredentialsRejected('chat-official'),
        meta_error_code: 100,
      },
    });
    expect((await world.store.get(target.workspaceId, target.integration.id))?.integration).toMatchObject({
      status: 'disconnected',
      status_reason: 'credentials_rejected',
    });
  });
});

describe('chat-official callbacks into the connector', () => {
  it("settles a send whose answer was lost from Meta's first status of it, which names our message", async () => {
    const world = await startWorld();
    const target = await world.create();
    const account = target.config.phone_number_id;
    await world.control('/windows', {
      channel: 'chat-official',
      account,
      number: '5511944440031',
      last_inbound_at: new Date().toISOString(),
    });
    // Meta takes the message and sends it; its answer never reaches the connector.
    await world.control('/faults', { channel: 'chat-official', account, mode: 'lost_answer' });
    const messageId = randomUUID();
    const command = {
      workspace_id: target.workspaceId,
      integration_id: target.integration.id,
      message_id: messageId,
      to: '+5511944440031',
      text: 'chegou?',
    };
    const quickly = { ...world.deps, providerTimeoutMs: 300 };
    expect(await failure(sendText(quickly, command))).toMatchObject({ status: 504 });
    await world.control('/faults', { channel: 'chat-official', account, mode: 'off' });
    const [atMeta] = (await world.sent()) as Array<{
      provider_message_id: string;
      body: Record<string, unknown>;
    }>;
    expect(atMeta!.body.biz_opaque_callback_data).toBe(messageId);
    // Not sent again while its outcome is unknown.
    expect(await failure(sendText(world.deps, command))).toMatchObject({
      status: 409,
      body: { error: platformTexts.sendOutcomeUnknown(messageId) },
    });

    // Meta's status repeats the reference: the attempt is known as sent, with Meta's id.
    const status = await world.control('/status', {
      channel: 'chat-official',
      account,
      message_id: atMeta!.provider_message_id,
      status: 'delivered',
      app_secret: target.config.app_secret,
    });
    expect(status.body.delivered_status).toBe(200);
    const [event] = await world.events(target.workspaceId, 'inbound.status');
    expect(event).toMatchObject({
      provider_message_id: atMeta!.provider_message_id,
      status: 'delivered',
      message_id: messageId,
    });
    const settled = await sendText(world.deps, command);
    expect(settled.provider_message_id).toBe(atMeta!.provider_message_id);
    expect(await world.sent()).toHaveLength(1);
  });

  it('takes no reference of another integration, nor one that is not our id', async () => {
    const world = await startWorld();
    const mine = await world.create();
    const theirs = await world.create();
    const account = mine.config.phone_number_id;
    await world.control('/windows', {
      channel: 'chat-official',
      account,
      number: '5511944440032',
      last_inbound_at: new Date().toISOString(),
    });
    // Their message's send of unknown outcome, which a status of ours must not settle.
    const theirMessage = randomUUID();
    await pool.query('insert into sends (message_id, workspace_id, integration_id) values ($1, $2, $3)', [
      theirMessage,
      theirs.workspaceId,
      theirs.integration.id,
    ]);
    for (const reference of [theirMessage, 'not-a-uuid']) {
      const response = await fetch(`${world.sandboxUrl}/chat-official/v21.0/${account}/messages`, {
        method: 'POST',
        headers: { authorization: `Bearer ${mine.config.access_token}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          messaging_product: 'whatsapp',
          to: '5511944440032',
          type: 'text',
          text: { body: 'referência alheia' },
          biz_opaque_callback_data: reference,
        }),
      });
      const { messages } = (await response.json()) as { messages: Array<{ id: string }> };
      await world.control('/status', {
        channel: 'chat-official',
        account,
        message_id: messages[0]!.id,
        status: 'sent',
        app_secret: mine.config.app_secret,
      });
    }
    const events = await world.events(mine.workspaceId, 'inbound.status');
    expect(events.map((event) => event.message_id)).toEqual([null, null]);
    const { rows } = await pool.query('select provider_message_id from sends where message_id = $1', [
      theirMessage,
    ]);
    expect(rows).toEqual([{ provider_message_id: null }]);
  });

  it('takes a batched notification in once however often Meta redelivers it', async () => {
    const world = await startWorld();
    const target = await world.create();
    const batch = await world.control('/chat-official/notifications', {
      account: target.config.phone_number_id,
      app_secret: target.config.app_secret,
      messages: [
        { from: '5511944440011', name: 'Ana', text: 'Olá, tudo bem?' },
        { from: '5511944440012', name: 'João', text: 'Preço 1/2?' },
      ],
    });
    expect(batch.body.delivered_status).toBe(200);
    for (let i = 0; i < 2; i++) {
      const again = await world.control('/chat-official/redeliver', {
        account: target.config.phone_number_id,
      });
      expect(again.body.delivered_status).toBe(200);
    }
    const events = await world.events(target.workspaceId, 'inbound.message');
    expect(events.map((event) => [event.from, event.name, event.text])).toEqual([
      ['+5511944440011', 'Ana', 'Olá, tudo bem?'],
      ['+5511944440012', 'João', 'Preço 1/2?'],
    ]);
  });

  it("takes in what each kind of message says: captions, button labels, list rows, a reaction's emoji", async () => {
    const world = await startWorld();
    const target = await world.create();
    const say = (type: string, text: string) => ({ from: '5511944440021', name: 'Ana', type, text });
    const batch = await world.control('/chat-official/notifications', {
      account: target.config.phone_number_id,
      app_secret: target.config.app_secret,
      messages: [
        say('image', 'Foto do produto'),
        say('video', 'Vídeo'),
        say('document', 'Contrato assinado'),
        say('audio', '-'),
        say('location', 'Loja Paulista'),
        say('pin', '-'),
        say('button', 'Sim'),
        say('button_reply', 'Alterar pedido'),
        say('list_reply', 'Segunda-feira'),
        say('reaction', '👍'),
        say('sticker', '-'),
        say('unsupported', '-'),
        // Neither is the customer's message: a reaction taken back, and a number change Meta announces.
        say('reaction_removed', '-'),
        say('system', 'User Ana changed from 5511944440021 to 5511944440099'),
      ],
    });
    expect(batch.body.delivered_status).toBe(200);
    const events = await world.events(target.workspaceId, 'inbound.message');
    expect(events.map((event) => [event.type, event.text])).toEqual([
      ['image', 'Foto do produto'],
      ['video', 'Vídeo'],
      ['document', 'Contrato assinado'],
      ['audio', ''],
      ['location', 'Loja Paulista, Av. Paulista, 1578 (-23.5613, -46.6565)'],
      ['location', '-23.5613, -46.6565'],
      ['text', 'Sim'],
      ['text', 'Alterar pedido'],
      ['text', 'Segunda-feira'],
      ['others', '👍'],
      ['others', ''],
      ['others', ''],
    ]);
    expect(new Set(events.map((event) => event.from))).toEqual(new Set(['+5511944440021']));
  });

  it('keys a customer who shows a username and no number by their BSUID, and replies to it', async () => {
    const world = await startWorld();
    const target = await world.create();
    const inbound = await world.control('/inbound', {
      channel: 'chat-official',
      account: target.config.phone_number_id,
      app_secret: target.config.app_secret,
      from: '5511944440031',
      name: 'Bia',
      username: 'bia.compras',
      text: 'Oi, quero saber do pedido',
    });
    expect(inbound.body.delivered_status).toBe(200);
    const [event] = await world.events(target.workspaceId, 'inbound.message');
    expect(event).toMatchObject({ from: null, name: 'Bia', text: 'Oi, quero saber do pedido' });
    const userId = String(event!.from_user_id);
    expect(userId).toMatch(/^BR\.\d+$/);
    // The reply goes to the BSUID, inside the window the message opened.
    const sent = await sendText(world.deps, {
      workspace_id: target.workspaceId,
      integration_id: target.integration.id,
      message_id: randomUUID(),
      to: null,
      to_user_id: userId,
      text: 'Seu pedido saiu para entrega',
    });
    expect(sent.provider_message_id).toMatch(/^wamid\./);
    const [request] = (await world.sent()) as Array<{ body: Record<string, unknown> }>;
    expect(request!.body).toMatchObject({
      recipient: userId,
      text: { body: 'Seu pedido saiu para entrega' },
    });
    expect(request!.body).not.toHaveProperty('to');
    // A customer who shows their number keeps being keyed by it, their BSUID beside it for messaging to
    // note on their contact.
    await world.control('/inbound', {
      channel: 'chat-official',
      account: target.config.phone_number_id,
      app_secret: target.config.app_secret,
      from: '5511944440032',
      text: 'Olá',
    });
    const events = await world.events(target.workspaceId, 'inbound.message');
    expect(events[1]).toMatchObject({
      from: '+5511944440032',
      from_user_id: expect.stringMatching(/^BR\.\d+$/),
    });
    // The same BSUID when they later hide their number behind a username.
    await world.control('/inbound', {
      channel: 'chat-official',
      account: target.config.phone_number_id,
      app_secret: target.config.app_secret,
      from: '5511944440032',
      username: 'cliente.32',
      text: 'Sou eu de novo',
    });
    const [, , hidden] = await world.events(target.workspaceId, 'inbound.message');
    expect(hidden).toMatchObject({ from: null, from_user_id: events[1]!.from_user_id });
  });

  it("announces Meta's late 131047 failure of a send it accepted, naming our message", async () => {
    const world = await startWorld();
    const target = await world.create();
    // Meta knows the app's secret; the sandbox is told.
    await world.control('/chat-official/app-secret', {
      account: target.config.phone_number_id,
      app_secret: target.config.app_secret,
    });
    const messageId = randomUUID();
    const sent = await sendText(world.deps, {
      workspace_id: target.workspaceId,
      integration_id: target.integration.id,
      message_id: messageId,
      to: '+5511944440021',
      text: 'fora da janela',
    });
    expect(sent.provider_message_id).toMatch(/^wamid\./);
    const [status] = await waitFor(
      async () => {
        const statuses = await world.events(target.workspaceId, 'inbound.status');
        return statuses.length > 0 ? statuses : undefined;
      },
      { what: 'the inbound.status event' },
    );
    expect(status).toMatchObject({
      integration_id: target.integration.id,
      provider_message_id: sent.provider_message_id,
      message_id: messageId,
      status: 'failed',
      error_code: 131047,
      error: expect.stringMatching(/^131047 Re-engagement message: /),
      at: expect.any(String),
    });
  });
});
