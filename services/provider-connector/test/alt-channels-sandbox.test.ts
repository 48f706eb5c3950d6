import { randomUUID } from 'node:crypto';
import { InProcessBus } from '@inbox/bus';
import { platformTexts } from '@inbox/contracts';
import { OutboxRelay, type Pool } from '@inbox/db';
import { createHttpApp, finishHttpApp, SecretBox } from '@inbox/service-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createEvolutionInstance,
  createSandbox,
  EVOLUTION_GLOBAL_API_KEY,
} from '../../provider-sandbox/src/index.js';
import { ALT_A_CALLBACK_HEADER, altAAdapter } from '../src/adapters/alt-a.js';
import { altBAdapter } from '../src/adapters/alt-b.js';
import { botAdapter } from '../src/adapters/bot.js';
import { inboundRoutes } from '../src/handlers/inbound.js';
import { createIntegration, updateIntegration } from '../src/handlers/integrations.js';
import { KeptCallbacks } from '../src/handlers/kept-callbacks.js';
import { sendText } from '../src/handlers/send-text.js';
import { IntegrationStore } from '../src/store/integrations.js';
import { loopbackProviders, migratedPool } from './support.js';

// The connector's alt-a and alt-b adapters against the sandbox's Evolution API v2 and Z-API emulators,
// which answer and call back as those providers do at their default settings: integrations created
// through the handler, callbacks delivered by the emulators to the connector's own inbound routes, and
// what they became read from the connector's outbox.

type Json = Record<string, unknown>;

const providers = loopbackProviders();
const { logger, call } = providers;
let pool: Pool;
let store: IntegrationStore;
let kept: KeptCallbacks;
let connectorUrl = '';
let sandboxUrl = '';

const sandbox = createSandbox();

beforeAll(async () => {
  pool = await migratedPool();
  store = new IntegrationStore(pool, new SecretBox(SecretBox.generateKey()));
  // The events stay in the outbox, where the tests read them.
  const relay = new OutboxRelay({ pool, bus: new InProcessBus(), schema: 'connector' });
  const app = createHttpApp({ logger, parseJson: false });
  kept = new KeptCallbacks({ pool, store, relay, logger });
  app.use(inboundRoutes({ pool, store, relay, logger, kept }));
  finishHttpApp(app, logger);
  connectorUrl = await providers.listen(app);
  sandboxUrl = await providers.listen(sandbox.app);
});

afterAll(async () => {
  await kept?.stop();
  await pool?.end();
});

/** What the connector's integration handlers are given, here. */
const handlerDeps = () => ({
  store,
  guard: providers.guard,
  logger,
  publicConnectorUrl: connectorUrl,
  providerTimeoutMs: 5_000,
});

async function create(channel: 'alt-a' | 'alt-b', config: Json) {
  // Evolution knows only instances an operator created, in its manager, with their token.
  if (channel === 'alt-a')
    await createEvolutionInstance(sandboxUrl, String(config.instance), String(config.api_key));
  const workspaceId = randomUUID();
  const created = await createIntegration(handlerDeps(), {
    workspace_id: workspaceId,
    channel,
    config: { base_url: `${sandboxUrl}/${channel}`, ...config },
  });
  const stored = (await store.get(workspaceId, created.id))!;
  return { workspaceId, created, config: stored.config };
}

async function control(path: string, body: Json) {
  const res = await fetch(`${sandboxUrl}/_sandbox${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Json };
}

async function registered(channel: string, account: string): Promise<Json[]> {
  return (await (
    await fetch(`${sandboxUrl}/_sandbox/webhooks?channel=${channel}&account=${account}`)
  ).json()) as Json[];
}

async function outbox(workspaceId: string, type: string): Promise<Json[]> {
  // Z-API's callbacks are kept and recorded by the workers: all of them, before the outbox is read.
  await kept.drain();
  const { rows } = await pool.query<{ data: Json }>(
    'select data from outbox where workspace_id = $1 and type = $2 order by seq',
    [workspaceId, type],
  );
  return rows.map((row) => row.data);
}

describe('bot against the Telegram Bot API emulator', () => {
  it('waits out, once, the second Telegram takes between two setWebhook calls of a bot', async () => {
    const config = {
      bot_token: '7001002004:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw',
      secret_token: 'twice_1',
      base_url: `${sandboxUrl}/bot`,
    };
    await botAdapter.registerInbound(config, 'https://connector.example/inbound/bot/first', call());
    await botAdapter.registerInbound(config, 'https://connector.example/inbound/bot/second', call());
    expect(await registered('bot', '7001002004')).toEqual([
      expect.objectContaining({ url: 'https://connector.example/inbound/bot/second' }),
    ]);
  });

  it("says which of Telegram's rules the callback URL breaks when setWebhook refuses it, and keeps nothing", async () => {
    const workspaceId = randomUUID();
    const refused = createIntegration(handlerDeps(), {
      workspace_id: workspaceId,
      channel: 'bot',
      config: {
        bot_token: '7001002003:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw',
        secret_token: 'refused_url-1',
        base_url: `${sandboxUrl}/bot`,
      },
    });
    const port = Number(new URL(connectorUrl).port);
    const callbackUrl = `${connectorUrl}/inbound/bot/00000000-0000-4000-8000-000000000000`;
    const expected = platformTexts.inboundRegistrationRefused('bot', [
      platformTexts.callbackUrlNotHttps(callbackUrl),
      platformTexts.callbackUrlPort(port, [443, 80, 88, 8443]),
    ]);
    const error = await refused.catch((caught: unknown) => caught);
    expect(error).toMatchObject({ status: 502 });
    const { body } = error as { body: { error: string } };
    expect(
      body.error.replace(
        /\/inbound\/bot\/[0-9a-f-]{36}/,
        '/inbound/bot/00000000-0000-4000-8000-000000000000',
      ),
    ).toBe(expected);
    expect(await store.list(workspaceId)).toEqual([]);
  });
});

describe('bot sends against the Telegram Bot API emulator', () => {
  it('sends a text Telegram keeps within its limit once trimmed, and refuses one over it before calling', async () => {
    const config = {
      bot_token: '7001002005:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw',
      secret_token: 'trim_1',
      base_url: `${sandboxUrl}/bot`,
    };
    await botAdapter.registerInbound(config, 'https://127.0.0.1/inbound/bot/trim', call());
    // The user writes first (the post to the unreachable callback fails; Telegram knows the chat anyway).
    await control('/inbound', { channel: 'bot', account: '7001002005', from: '5550001', text: 'oi' });
    const longest = 'a'.repeat(4096);
    const sent = await botAdapter.sendText(config, { to: '5550001', text: `${longest}\n` }, call());
    expect(sent.providerMessageId).toMatch(/^5550001:\d+$/);
    await expect(
      botAdapter.sendText(config, { to: '5550001', text: `${longest}b` }, call()),
    ).rejects.toMatchObject({ status: 400, body: { error: platformTexts.textLength } });
    const log = (await (await fetch(`${sandboxUrl}/_sandbox/sent?channel=bot&to=5550001`)).json()) as Json[];
    expect(log.map((entry) => (entry.body as Json).text)).toEqual([`${longest}\n`]);
  });
});

describe('alt-a against the Evolution API v2 emulator', () => {
  it('registers with v2 field names and a secret header, and takes a default callback (apikey and pushName null)', async () => {
    const { workspaceId, created, config } = await create('alt-a', { instance: 'evo-1', api_key: 'k1' });
    expect(created).not.toHaveProperty('warnings');
    expect(config.callback_secret).toMatch(/^[\w-]{43}$/);
    expect(await registered('alt-a', 'evo-1')).toEqual([
      {
        channel: 'alt-a',
        account: 'evo-1',
        url: `${connectorUrl}/inbound/alt-a/${created.id}`,
        headers: { [ALT_A_CALLBACK_HEADER]: config.callback_secret },
        events: ['MESSAGES_UPSERT', 'MESSAGES_UPDATE'],
      },
    ]);

    const delivered = await control('/inbound', {
      channel: 'alt-a',
      account: 'evo-1',
      from: '5511944440001',
      text: 'oi',
    });
    expect(delivered.body).toMatchObject({ delivered_status: 200 });
    expect(await outbox(workspaceId, 'inbound.message')).toEqual([
      expect.objectContaining({
        from: '+5511944440001',
        name: null,
        text: 'oi',
        provider_message_id: delivered.body.provider_message_id,
        integration: { id: created.id, channel: 'alt-a', provider: 'chat' },
      }),
    ]);
  });

  it('takes callbacks posted by event once an operator turns byEvents on, and no other path under its URL', async () => {
    const { workspaceId, created, config } = await create('alt-a', { instance: 'evo-9', api_key: 'k9' });
    // As Evolution's manager saves it: the same webhook, byEvents on.
    const [webhook] = await registered('alt-a', 'evo-9');
    const set = await fetch(`${sandboxUrl}/alt-a/webhook/set/evo-9`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', apikey: 'k9' },
      body: JSON.stringify({
        webhook: {
          enabled: true,
          url: webhook!.url,
          headers: webhook!.headers,
          byEvents: true,
          events: webhook!.events,
        },
      }),
    });
    expect(set.status).toBe(201);
    const delivered = await control('/inbound', {
      channel: 'alt-a',
      account: 'evo-9',
      from: '5511944440009',
      text: 'por evento',
    });
    expect(delivered.body).toMatchObject({ delivered_status: 200 });
    expect((await outbox(workspaceId, 'inbound.message')).map((event) => event.text)).toEqual(['por evento']);
    const elsewhere = await fetch(`${connectorUrl}/inbound/alt-a/${created.id}/contacts-upsert`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        [ALT_A_CALLBACK_HEADER]: String(config.callback_secret),
      },
      body: '{}',
    });
    expect(elsewhere.status).toBe(404);
  });

  it('takes a LID-addressed message by its remoteJidAlt number, once however often Evolution retries it', async () => {
    const { workspaceId } = await create('alt-a', { instance: 'evo-2', api_key: 'k2' });
    const delivered = await control('/inbound', {
      channel: 'alt-a',
      account: 'evo-2',
      from: '5511944440002',
      name: 'Lia',
      text: 'por lid',
      addressing_mode: 'lid',
      repeat: 3,
    });
    expect(delivered.body).toMatchObject({ delivered_statuses: [200, 200, 200] });
    const received = await outbox(workspaceId, 'inbound.message');
    expect(received).toHaveLength(1);
    expect(received[0]).toMatchObject({ from: '+5511944440002', name: 'Lia', text: 'por lid' });
  });

  it('keys a contact WhatsApp sent no number for by its LID, replies to it there, and reads the acks', async () => {
    const { workspaceId, created } = await create('alt-a', { instance: 'evo-lid', api_key: 'klid' });
    const delivered = await control('/inbound', {
      channel: 'alt-a',
      account: 'evo-lid',
      from: '5511944440032',
      name: 'Lia',
      text: 'sem número',
      addressing_mode: 'lid-only',
    });
    expect(delivered.body).toMatchObject({ delivered_status: 200 });
    const [received] = await outbox(workspaceId, 'inbound.message');
    expect(received).toMatchObject({
      from: null,
      from_user_id: expect.stringMatching(/^\d{14}@lid$/),
      name: 'Lia',
      text: 'sem número',
      integration: { id: created.id, channel: 'alt-a', provider: 'chat' },
    });
    const typed = { base_url: `${sandboxUrl}/alt-a`, instance: 'evo-lid', api_key: 'klid' };
    const { providerMessageId } = await altAAdapter.sendText(
      typed,
      { to: String(received!.from_user_id), text: 'resposta' },
      call(),
    );
    const sent = (await (await fetch(`${sandboxUrl}/_sandbox/sent?channel=alt-a`)).json()) as Json[];
    expect(sent.find((entry) => entry.provider_message_id === providerMessageId)).toMatchObject({
      to: received!.from_user_id,
      body: { number: received!.from_user_id, text: 'resposta' },
    });
    await control('/status', {
      channel: 'alt-a',
      account: 'evo-lid',
      message_id: providerMessageId,
      status: 'read',
    });
    expect(await outbox(workspaceId, 'inbound.status')).toEqual([
      expect.objectContaining({ provider_message_id: providerMessageId, status: 'read' }),
    ]);
  });

  it('reads what each kind says, a place with where it is, inside a disappearing-messages envelope too, and no reaction taken back', async () => {
    const { workspaceId } = await create('alt-a', { instance: 'evo-6', api_key: 'k6' });
    const say = async (type: string, text: string) =>
      expect(
        (await control('/inbound', { channel: 'alt-a', account: 'evo-6', from: '5511944440006', type, text }))
          .body,
      ).toMatchObject({ delivered_status: 200 });
    await say('ephemeral', 'mensagem temporária');
    await say('image', 'foto do pedido');
    await say('location', 'Loja Paulista');
    await say('pin', '-');
    await say('live_location', 'estou a caminho');
    await say('button_reply', 'Sim');
    await say('list_reply', 'Segunda-feira');
    await say('reaction', '❤️');
    await say('reaction_removed', '-');
    expect((await outbox(workspaceId, 'inbound.message')).map((event) => [event.type, event.text])).toEqual([
      ['text', 'mensagem temporária'],
      ['image', 'foto do pedido'],
      ['location', 'Loja Paulista, Av. Paulista, 1578 (-23.5613, -46.6565)'],
      ['location', '-23.5613, -46.6565'],
      ['location', 'estou a caminho (-23.5613, -46.6565)'],
      ['text', 'Sim'],
      ['text', 'Segunda-feira'],
      ['others', '❤️'],
    ]);
  });

  it('makes nothing of a group message', async () => {
    const { workspaceId } = await create('alt-a', { instance: 'evo-3', api_key: 'k3' });
    const group = await control('/inbound', {
      channel: 'alt-a',
      account: 'evo-3',
      from: '5511944440003',
      text: 'no grupo',
      group_id: '120363025246125486',
    });
    expect(group.body).toMatchObject({ delivered_status: 200 });
    await control('/inbound', { channel: 'alt-a', account: 'evo-3', from: '5511944440003', text: 'direto' });
    expect((await outbox(workspaceId, 'inbound.message')).map((event) => event.text)).toEqual(['direto']);
  });

  it('reads the acks of its sends from messages.update', async () => {
    const { workspaceId, config } = await create('alt-a', { instance: 'evo-4', api_key: 'k4' });
    const { providerMessageId } = await altAAdapter.sendText(
      { ...config, base_url: config.base_url!, instance: 'evo-4', api_key: 'k4' },
      { to: '5511944440004', text: 'olá' },
      call(),
    );
    for (const status of ['sent', 'delivered', 'read', 'failed']) {
      await control('/status', { channel: 'alt-a', account: 'evo-4', message_id: providerMessageId, status });
    }
    expect(
      (await outbox(workspaceId, 'inbound.status')).map((event) => [event.provider_message_id, event.status]),
    ).toEqual([
      [providerMessageId, 'sent'],
      [providerMessageId, 'delivered'],
      [providerMessageId, 'read'],
      [providerMessageId, 'failed'],
    ]);
  });

  it('refuses a callback that lacks the header, whatever its body says', async () => {
    const { created } = await create('alt-a', { instance: 'evo-5', api_key: 'k5' });
    const forged = await fetch(`${connectorUrl}/inbound/alt-a/${created.id}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        event: 'messages.upsert',
        instance: 'evo-5',
        apikey: 'k5',
        data: {
          key: { remoteJid: '5511900000000@s.whatsapp.net', fromMe: false, id: 'X1' },
          message: { conversation: 'hi' },
        },
      }),
    });
    expect(forged.status).toBe(401);
  });

  it('fails sends with the reason while disconnected or logged out, and while WhatsApp rate limits', async () => {
    const config = { base_url: `${sandboxUrl}/alt-a`, instance: 'evo-6', api_key: 'k6' };
    await createEvolutionInstance(sandboxUrl, 'evo-6', 'k6');
    await altAAdapter.sendText(config, { to: '5511944440006', text: 'antes' }, call());
    await control('/accounts', { channel: 'alt-a', account: 'evo-6', state: 'disconnected' });
    await expect(
      altAAdapter.sendText(config, { to: '5511944440006', text: 'x' }, call()),
    ).rejects.toMatchObject({
      name: 'ProviderError',
      status: 400,
      message:
        'alt-a instance is not connected to WhatsApp (sendText answered 400: Error: Connection Closed)',
    });
    await control('/accounts', { channel: 'alt-a', account: 'evo-6', state: 'logged_out' });
    await expect(
      altAAdapter.sendText(config, { to: '5511944449999', text: 'x' }, call()),
    ).rejects.toMatchObject({
      status: 500,
      message: 'alt-a instance is not connected to WhatsApp (sendText answered 500: Connection Closed)',
    });
    await control('/accounts', { channel: 'alt-a', account: 'evo-6', state: 'connected' });
    await control('/faults', { channel: 'alt-a', account: 'evo-6', mode: 'rate_limit' });
    await expect(
      altAAdapter.sendText(config, { to: '5511944440006', text: 'x' }, call()),
    ).rejects.toMatchObject({
      message:
        'alt-a: WhatsApp is rate limiting the instance, try again later (sendText answered 400: Error: rate-overlimit)',
    });
    await control('/faults', { channel: 'alt-a', account: 'evo-6', mode: 'off' });
  });

  it('refuses an integration naming an instance Evolution does not have, or with a key not its own, and keeps neither', async () => {
    await createEvolutionInstance(sandboxUrl, 'evo-10', 'k10');
    const refused = async (config: Json) => {
      const workspaceId = randomUUID();
      const error = await createIntegration(handlerDeps(), {
        workspace_id: workspaceId,
        channel: 'alt-a',
        config: { base_url: `${sandboxUrl}/alt-a`, ...config },
      }).catch((caught: unknown) => caught);
      expect(await store.list(workspaceId)).toEqual([]);
      return error;
    };
    const answer = {
      status: 400,
      body: {
        error:
          'O provedor do canal "alt-a" recusou as credenciais da integração ou não conhece a conta: verifique a configuração',
      },
    };
    // A typo in the instance: Evolution answers 404 whatever the key.
    expect(await refused({ instance: 'evo-1O', api_key: 'k10' })).toMatchObject(answer);
    expect(await refused({ instance: 'evo-10', api_key: 'k1O' })).toMatchObject(answer);
    expect(await create('alt-a', { instance: 'evo-10', api_key: 'k10' })).toMatchObject({
      created: { status: 'connected' },
    });
  });

  it("connects, hears and sends with the server's global API key, which Evolution takes for any instance", async () => {
    await createEvolutionInstance(sandboxUrl, 'evo-global', 'instance-token');
    const workspaceId = randomUUID();
    const created = await createIntegration(handlerDeps(), {
      workspace_id: workspaceId,
      channel: 'alt-a',
      config: { base_url: `${sandboxUrl}/alt-a`, instance: 'evo-global', api_key: EVOLUTION_GLOBAL_API_KEY },
    });
    expect(created.status).toBe('connected');
    const config = (await store.get(workspaceId, created.id))!.config;
    const delivered = await control('/inbound', {
      channel: 'alt-a',
      account: 'evo-global',
      from: '5511944440031',
      text: 'oi',
    });
    expect(delivered.body).toMatchObject({ delivered_status: 200 });
    const { providerMessageId } = await altAAdapter.sendText(
      { base_url: `${sandboxUrl}/alt-a`, instance: 'evo-global', api_key: String(config.api_key) },
      { to: '5511944440031', text: 'olá' },
      call(),
    );
    expect(providerMessageId).toMatch(/^3EB0/);
  });

  it('disconnects an integration whose instance Evolution deleted, and not for another 404 or a 401', async () => {
    const { workspaceId, created, config } = await create('alt-a', { instance: 'evo-11', api_key: 'k11' });
    const typed = { base_url: config.base_url!, instance: 'evo-11', api_key: 'k11' };
    // Evolution's own authGuard answers 401 when its lookup of the key fails: no proof of a wrong key.
    await expect(
      altAAdapter.sendText({ ...typed, api_key: 'k1l' }, { to: '5511944440011', text: 'x' }, call()),
    ).rejects.toMatchObject({ status: 401, refusal: undefined });
    // A 404 that is not Evolution saying so (a proxy in front of it, while it restarts).
    await control('/faults', { channel: 'alt-a', account: 'evo-11', mode: 'error', status: 404 });
    await expect(
      altAAdapter.sendText(typed, { to: '5511944440011', text: 'x' }, call()),
    ).rejects.toMatchObject({ status: 404, refusal: undefined });
    await control('/faults', { channel: 'alt-a', account: 'evo-11', mode: 'off' });
    const deleted = await fetch(`${sandboxUrl}/alt-a/instance/delete/evo-11`, {
      method: 'DELETE',
      headers: { apikey: 'k11' },
    });
    expect(deleted.status).toBe(200);
    const send = {
      workspace_id: workspaceId,
      integration_id: created.id,
      message_id: randomUUID(),
      to: '+5511944440011',
      text: 'x',
    };
    await expect(
      sendText({ store, guard: providers.guard, logger, providerTimeoutMs: 5_000 }, send),
    ).rejects.toMatchObject({
      status: 502,
      body: { error: platformTexts.providerCredentialsRejected('alt-a') },
    });
    expect((await store.get(workspaceId, created.id))?.integration).toMatchObject({
      status: 'disconnected',
      status_reason: 'credentials_rejected',
    });

    // Connected again by an operator, it is registered again: while the instance is gone that is the
    // provider refusing it, and it stays disconnected; once an operator made the instance again, it
    // connects, and Evolution calls it.
    const deps = handlerDeps();
    const reconnect = () =>
      updateIntegration(deps, { workspace_id: workspaceId, integration_id: created.id, status: 'connected' });
    await expect(reconnect()).rejects.toMatchObject({
      status: 400,
      body: { error: platformTexts.inboundRegistrationCredentialsRejected('alt-a') },
    });
    expect((await store.get(workspaceId, created.id))?.integration).toMatchObject({
      status: 'disconnected',
      status_reason: 'credentials_rejected',
    });
    expect(await registered('alt-a', 'evo-11')).toEqual([]);
    await createEvolutionInstance(sandboxUrl, 'evo-11', 'k11');
    expect(await reconnect()).toMatchObject({ status: 'connected', status_reason: null });
    expect(await registered('alt-a', 'evo-11')).toEqual([
      expect.objectContaining({ url: `${connectorUrl}/inbound/alt-a/${created.id}` }),
    ]);
  });

  it('takes in, when Evolution delivers it again, a message the connector could not record the first time', async () => {
    // Evolution's own waits (5 s, doubling) times a fiftieth: the second try comes some 100 ms later.
    const evolution = createSandbox({ redeliveryDelayScale: 0.02 });
    const evolutionUrl = await providers.listen(evolution.app);
    await createEvolutionInstance(evolutionUrl, 'evo-again', 'ka');
    const workspaceId = randomUUID();
    await createIntegration(handlerDeps(), {
      workspace_id: workspaceId,
      channel: 'alt-a',
      config: { base_url: `${evolutionUrl}/alt-a`, instance: 'evo-again', api_key: 'ka' },
    });
    // Postgres refuses to record it, as while it is down.
    await pool.query(
      `alter table outbox add constraint refuses_recusado check (data->>'text' is distinct from 'recusado') not valid`,
    );
    let answer: Response;
    try {
      answer = await fetch(`${evolutionUrl}/_sandbox/inbound`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          channel: 'alt-a',
          account: 'evo-again',
          from: '5511944440009',
          text: 'recusado',
        }),
      });
    } finally {
      await pool.query('alter table outbox drop constraint refuses_recusado');
    }
    expect(await answer.json()).toMatchObject({ delivered_status: 500, redelivering: true });
    await evolution.redelivered();
    expect((await outbox(workspaceId, 'inbound.message')).map((event) => event.text)).toEqual(['recusado']);
  });

  it('fails a send to a number with no WhatsApp, naming the number, as Evolution refuses it', async () => {
    const config = { base_url: `${sandboxUrl}/alt-a`, instance: 'evo-8', api_key: 'k8' };
    await createEvolutionInstance(sandboxUrl, 'evo-8', 'k8');
    await control('/without-whatsapp', { number: '5511944440008' });
    await expect(
      altAAdapter.sendText(config, { to: '+5511944440008', text: 'olá' }, call()),
    ).rejects.toMatchObject({
      name: 'ProviderError',
      status: 400,
      refusal: 'recipient_unknown',
      message: 'alt-a answered 400 to sendText: +5511944440008 is not on WhatsApp',
    });
  });
});

describe('alt-b against the Z-API emulator', () => {
  it('connects an instance once per workspace: a second integration of it is a 409 naming the first, before Z-API is called', async () => {
    const deps = handlerDeps();
    const workspaceId = randomUUID();
    const config = { base_url: `${sandboxUrl}/alt-b`, instance_id: 'z-once', token: 'tz' };
    const first = await createIntegration(deps, { workspace_id: workspaceId, channel: 'alt-b', config });
    const urls = async () => new Set((await registered('alt-b', 'z-once')).map((hook) => hook.url));
    const firstUrls = await urls();
    expect([...firstUrls]).toEqual([expect.stringContaining(`/inbound/alt-b/${first.id}?`)]);
    const taken = {
      status: 409,
      body: { error: platformTexts.integrationAccountConnected('alt-b', first.id) },
    };
    // The same server however its URL is written.
    const again = { ...config, base_url: `${sandboxUrl}/alt-b/` };
    await expect(
      createIntegration(deps, { workspace_id: workspaceId, channel: 'alt-b', config: again }),
    ).rejects.toMatchObject(taken);
    expect((await store.list(workspaceId)).map((found) => found.id)).toEqual([first.id]);
    // Z-API was not called: its callbacks still go to the first.
    expect(await urls()).toEqual(firstUrls);

    // Another workspace connects its own integration of it; the provider then calls that one.
    const elsewhere = await createIntegration(deps, {
      workspace_id: randomUUID(),
      channel: 'alt-b',
      config,
    });
    expect([...(await urls())]).toEqual([expect.stringContaining(`/inbound/alt-b/${elsewhere.id}?`)]);

    // Disconnected, the first no longer stands in the way; connecting it again then does.
    const patch = (id: string, status: 'connected' | 'disconnected') =>
      updateIntegration(deps, { workspace_id: workspaceId, integration_id: id, status });
    await patch(first.id, 'disconnected');
    const second = await createIntegration(deps, { workspace_id: workspaceId, channel: 'alt-b', config });
    await expect(patch(first.id, 'connected')).rejects.toMatchObject({
      status: 409,
      body: { error: platformTexts.integrationAccountConnected('alt-b', second.id) },
    });
    expect((await store.get(workspaceId, first.id))?.integration.status).toBe('disconnected');
    // The connected one connected again changes nothing, even beside a twin connected before the rule.
    await pool.query(`update integrations set status = 'connected' where id = $1`, [first.id]);
    expect(await patch(second.id, 'connected')).toMatchObject({ id: second.id, status: 'connected' });
    await pool.query(`update integrations set status = 'disconnected' where id = $1`, [first.id]);

    // The second disconnected, the first connected again takes Z-API's callbacks back: connected means
    // reachable, whoever the provider was pointed at meanwhile.
    await patch(second.id, 'disconnected');
    expect(await patch(first.id, 'connected')).toMatchObject({ id: first.id, status: 'connected' });
    expect([...(await urls())]).toEqual([expect.stringContaining(`/inbound/alt-b/${first.id}?`)]);
  });

  it('registers received, sent-by-me, status and on-send webhooks with the secret in the URL, and warns of http', async () => {
    const { created, config } = await create('alt-b', { instance_id: 'z-1', token: 't1' });
    expect(created.warnings).toEqual([
      expect.stringMatching(
        /^O provedor aceitou o webhook de entrada, mas o provedor real do canal "alt-b" o recusaria: a URL de callback http:\/\/\S+ usa http, e o provedor só aceita https; ajuste PUBLIC_CONNECTOR_URL$/,
      ),
    ]);
    const url = `${connectorUrl}/inbound/alt-b/${created.id}?callback_token=${config.callback_secret}`;
    expect(await registered('alt-b', 'z-1')).toEqual([
      { channel: 'alt-b', account: 'z-1', url, headers: {}, events: ['ReceivedCallback'] },
      {
        channel: 'alt-b',
        account: 'z-1',
        url,
        headers: {},
        events: ['ReceivedCallback', 'ReceivedCallback fromMe'],
      },
      { channel: 'alt-b', account: 'z-1', url, headers: {}, events: ['MessageStatusCallback'] },
      { channel: 'alt-b', account: 'z-1', url, headers: {}, events: ['DeliveryCallback'] },
    ]);
  });

  it('hears its customers on an instance whose sent-by-me webhook another system had set', async () => {
    // Set first, that webhook takes received messages in place of the received one.
    const elsewhere = await fetch(
      `${sandboxUrl}/alt-b/instances/z-8/token/t8/update-webhook-received-delivery`,
      {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ value: 'https://crm.example/zapi' }),
      },
    );
    expect(elsewhere.status).toBe(200);
    const { workspaceId } = await create('alt-b', { instance_id: 'z-8', token: 't8' });
    const delivered = await control('/inbound', {
      channel: 'alt-b',
      account: 'z-8',
      from: '5511955550008',
      text: 'alguém aí?',
    });
    expect(delivered.body).toMatchObject({ delivered_status: 200 });
    expect((await outbox(workspaceId, 'inbound.message')).map((event) => event.text)).toEqual(['alguém aí?']);
  });

  it('takes a callback Z-API sends with no credential, without the optional Client-Token', async () => {
    const { workspaceId, created } = await create('alt-b', { instance_id: 'z-2', token: 't2' });
    const delivered = await control('/inbound', {
      channel: 'alt-b',
      account: 'z-2',
      from: '5511955550002',
      text: 'oi',
      repeat: 2,
    });
    expect(delivered.body).toMatchObject({ delivered_statuses: [200, 200] });
    await control('/inbound', {
      channel: 'alt-b',
      account: 'z-2',
      from: '5511955550002',
      text: 'no grupo',
      group_id: '120363019502650977',
    });
    const received = await outbox(workspaceId, 'inbound.message');
    expect(received).toEqual([
      expect.objectContaining({
        from: '+5511955550002',
        name: null,
        text: 'oi',
        integration: { id: created.id, channel: 'alt-b', provider: 'chat' },
      }),
    ]);
    // Posted without the token of its URL, a callback is refused.
    const forged = await fetch(`${connectorUrl}/inbound/alt-b/${created.id}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"type":"ReceivedCallback"}',
    });
    expect(forged.status).toBe(401);
  });

  it('keys a contact WhatsApp names only by its LID by that LID, and replies to it there', async () => {
    const { workspaceId, created, config } = await create('alt-b', { instance_id: 'z-6', token: 't6' });
    const delivered = await control('/inbound', {
      channel: 'alt-b',
      account: 'z-6',
      from: '5511955550006',
      text: 'sem número',
      addressing_mode: 'lid',
    });
    expect(delivered.body).toMatchObject({ delivered_status: 200 });
    const [received] = await outbox(workspaceId, 'inbound.message');
    expect(received).toMatchObject({
      from: null,
      from_user_id: expect.stringMatching(/^\d{14}@lid$/),
      name: null,
      text: 'sem número',
      integration: { id: created.id, channel: 'alt-b', provider: 'chat' },
    });
    const typed = { base_url: config.base_url!, instance_id: 'z-6', token: 't6' };
    await altBAdapter.sendText(typed, { to: String(received!.from_user_id), text: 'resposta' }, call());
    const sent = (await (await fetch(`${sandboxUrl}/_sandbox/sent?channel=alt-b`)).json()) as Json[];
    expect(sent.find((entry) => entry.account === 'z-6')?.body).toEqual({
      phone: received!.from_user_id,
      message: 'resposta',
    });
  });

  it('reads a place with where it is, a button or list answer by its label, a reaction by its emoji, and no reaction taken back', async () => {
    const { workspaceId } = await create('alt-b', { instance_id: 'z-7', token: 't7' });
    for (const [type, text] of [
      ['image', 'foto'],
      ['location', 'Loja Paulista'],
      ['pin', '-'],
      ['button_reply', 'Ótimo'],
      ['list_reply', 'Z-API'],
      ['reaction', '❤️'],
      ['reaction_removed', '-'],
    ]) {
      const delivered = await control('/inbound', {
        channel: 'alt-b',
        account: 'z-7',
        from: '5511955550007',
        type,
        text,
      });
      expect(delivered.body).toMatchObject({ delivered_status: 200 });
    }
    expect((await outbox(workspaceId, 'inbound.message')).map((event) => [event.type, event.text])).toEqual([
      ['image', 'foto'],
      ['location', 'Loja Paulista, Av. Paulista, 1578 (-23.5613, -46.6565)'],
      ['location', '-23.5613, -46.6565'],
      ['text', 'Ótimo'],
      ['text', 'Z-API'],
      ['others', '❤️'],
    ]);
  });

  it('reads MessageStatusCallback for its sends, and the DeliveryCallback of one to a number with no WhatsApp', async () => {
    const { workspaceId, config } = await create('alt-b', { instance_id: 'z-3', token: 't3' });
    const typed = { base_url: config.base_url!, instance_id: 'z-3', token: 't3' };
    const { providerMessageId } = await altBAdapter.sendText(
      typed,
      { to: '5511955550003', text: 'olá' },
      call(),
    );
    for (const status of ['sent', 'delivered', 'read']) {
      await control('/status', { channel: 'alt-b', account: 'z-3', message_id: providerMessageId, status });
    }
    expect((await outbox(workspaceId, 'inbound.status')).map((event) => event.status)).toEqual([
      'sent',
      'delivered',
      'read',
    ]);
    // Z-API takes a send to a number with no WhatsApp, and tells of it on the on-send webhook alone.
    await control('/without-whatsapp', { number: '5511955550009' });
    const failed = await altBAdapter.sendText(typed, { to: '5511955550009', text: 'olá?' }, call());
    await sandbox.idle();
    expect((await outbox(workspaceId, 'inbound.status')).at(-1)).toMatchObject({
      provider_message_id: failed.providerMessageId,
      status: 'failed',
      error: 'Phone number does not exist',
    });
  });

  it('refuses to send while the instance is not connected, rather than leave it in Z-API’s queue', async () => {
    const config = { base_url: `${sandboxUrl}/alt-b`, instance_id: 'z-4', token: 't4', client_token: 'ct4' };
    await control('/accounts', { channel: 'alt-b', account: 'z-4', state: 'disconnected' });
    await expect(
      altBAdapter.sendText(config, { to: '5511955550004', text: 'x' }, call()),
    ).rejects.toMatchObject({
      name: 'ProviderError',
      message: 'alt-b instance is not connected to WhatsApp: You need to restore the session.',
    });
    await control('/accounts', { channel: 'alt-b', account: 'z-4', state: 'connected' });
    const sent = (await (await fetch(`${sandboxUrl}/_sandbox/sent?channel=alt-b`)).json()) as Json[];
    expect(sent.filter((entry) => entry.account === 'z-4')).toEqual([]);

    // With the account's security token on, a call without it is refused with Z-API's words.
    await expect(
      altBAdapter.sendText(
        { ...config, client_token: undefined },
        { to: '5511955550004', text: 'x' },
        call(),
      ),
    ).rejects.toMatchObject({ message: 'alt-b answered 401 to status: null not allowed' });
  });
});

describe('an account connected in two workspaces, on providers that keep one callback URL per account', () => {
  const bot = (id: string) => ({
    bot_token: `${id}:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw`,
    secret_token: 'two_workspaces',
    base_url: `${sandboxUrl}/bot`,
  });
  const evolution = (instance: string) => ({ base_url: `${sandboxUrl}/alt-a`, instance, api_key: 'k2w' });
  const zapi = (instance: string) => ({
    base_url: `${sandboxUrl}/alt-b`,
    instance_id: instance,
    token: 'tz2',
  });
  const accounts = {
    bot: { account: '7001002005', config: () => bot('7001002005'), other: () => bot('7001002006') },
    'alt-a': { account: 'two-ws', config: () => evolution('two-ws'), other: () => evolution('two-ws-other') },
    'alt-b': { account: 'z-two-ws', config: () => zapi('z-two-ws'), other: () => zapi('z-two-ws-other') },
  } as const;

  it.each(Object.keys(accounts) as Array<keyof typeof accounts>)(
    '%s: the integration the provider no longer calls says so, callback_taken, until reconnected takes it back',
    async (channel) => {
      const { account, config, other } = accounts[channel];
      if (channel === 'alt-a') {
        await createEvolutionInstance(sandboxUrl, 'two-ws', 'k2w');
        await createEvolutionInstance(sandboxUrl, 'two-ws-other', 'k2w');
      }
      // Telegram takes only HTTPS callback URLs; nothing is delivered to them here.
      const deps = { ...handlerDeps(), publicConnectorUrl: 'https://connector.example' };
      const [first, second, third] = [randomUUID(), randomUUID(), randomUUID()];
      const create = (workspaceId: string, configured: Record<string, string>) =>
        createIntegration(deps, { workspace_id: workspaceId, channel, config: configured });
      // Z-API has a URL per webhook, all of them ours.
      const calledBack = async () => [
        ...new Set((await registered(channel, account)).map((hook) => String(hook.url))),
      ];
      const state = async (workspaceId: string, id: string) => {
        const { status, status_reason } = (await store.get(workspaceId, id))!.integration;
        return { status, status_reason };
      };
      const connected = { status: 'connected', status_reason: null };
      const taken = { status: 'disconnected', status_reason: 'callback_taken' };

      const a = await create(first, config());
      // Another account of the same provider is none of this.
      const bystander = await create(third, other());
      const b = await create(second, config());
      expect(await calledBack()).toEqual([expect.stringContaining(`/inbound/${channel}/${b.id}`)]);
      expect(await state(first, a.id)).toEqual(taken);
      expect(await state(second, b.id)).toEqual(connected);
      expect(await state(third, bystander.id)).toEqual(connected);

      // Reconnected, the first is called again, and the second says it is not.
      await updateIntegration(deps, { workspace_id: first, integration_id: a.id, status: 'connected' });
      expect(await calledBack()).toEqual([expect.stringContaining(`/inbound/${channel}/${a.id}`)]);
      expect(await state(first, a.id)).toEqual(connected);
      expect(await state(second, b.id)).toEqual(taken);
      expect(await state(third, bystander.id)).toEqual(connected);
    },
  );

  it('bot: a callback URL Telegram refuses leaves the bot with no webhook, and the integration it called says so', async () => {
    const deps = { ...handlerDeps(), publicConnectorUrl: 'https://connector.example' };
    const [first, second, third] = [randomUUID(), randomUUID(), randomUUID()];
    const a = await createIntegration(deps, {
      workspace_id: first,
      channel: 'bot',
      config: bot('7001002007'),
    });
    const bystander = await createIntegration(deps, {
      workspace_id: third,
      channel: 'bot',
      config: bot('7001002008'),
    });
    expect(await registered('bot', '7001002007')).toHaveLength(1);
    // Telegram calls ports 80, 88, 443 and 8443 only, and says so once it has closed the bot's webhook.
    const elsewhere = { ...deps, publicConnectorUrl: 'https://connector.example:9443' };
    await expect(
      createIntegration(elsewhere, { workspace_id: second, channel: 'bot', config: bot('7001002007') }),
    ).rejects.toMatchObject({ status: 502 });
    expect(await registered('bot', '7001002007')).toEqual([]);
    expect((await store.get(first, a.id))?.integration).toMatchObject({
      status: 'disconnected',
      status_reason: 'callback_taken',
    });
    expect((await store.get(third, bystander.id))?.integration.status).toBe('connected');
  });

  it('takes nothing from a registration accepted while its own call ran: which came last is unknown', async () => {
    const config = zapi('z-overlap');
    const deps = handlerDeps();
    const [first, second] = [randomUUID(), randomUUID()];
    const a = await createIntegration(deps, { workspace_id: first, channel: 'alt-b', config });
    const b = await createIntegration(deps, { workspace_id: second, channel: 'alt-b', config });
    expect((await store.get(first, a.id))?.integration.status).toBe('disconnected');
    // The first connected again by a call that began before the second's was accepted.
    await pool.query(`update integrations set status = 'connected', status_reason = null where id = $1`, [
      a.id,
    ]);
    const { rows } = await pool.query<{ before: string; after: string }>(
      `select (callback_registered_at - interval '1 millisecond')::text as before,
              (callback_registered_at + interval '1 millisecond')::text as after
         from integrations where id = $1`,
      [b.id],
    );
    await pool.query('update integrations set callback_registered_at = $2 where id = $1', [
      a.id,
      rows[0]!.before,
    ]);
    expect(await store.callbackRegistered(second, b.id, rows[0]!.before)).toEqual([]);
    expect((await store.get(first, a.id))?.integration.status).toBe('connected');
    // Accepted before the call began: taken.
    expect(await store.callbackRegistered(second, b.id, rows[0]!.after)).toEqual([
      { workspaceId: first, id: a.id },
    ]);
    expect((await store.get(first, a.id))?.integration).toMatchObject({
      status: 'disconnected',
      status_reason: 'callback_taken',
    });
  });
});
