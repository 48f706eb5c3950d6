import type { Server } from 'node:http';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createEvolutionInstance, createSandbox } from '../src/index.js';
import { close, listen, postJson, type Receiver, sandboxAndReceiver, startReceiver } from './support.js';

const INSTANCE = 'loja-1';
const API_KEY = 'evo-key-1';
const CUSTOMER = '5511977776666';
const CALLBACK_HEADER = 'x-inbox-callback-secret';

type Json = Record<string, unknown>;

describe('alt-a (Evolution API v2) emulation', () => {
  const sandbox = createSandbox();
  let base = '';
  let sandboxServer: Server;
  let receiver: Receiver;

  beforeAll(async () => {
    ({ server: sandboxServer, url: base } = await listen(sandbox));
    receiver = await startReceiver();
  });

  afterAll(async () => {
    await close(sandboxServer);
    await close(receiver.server);
  });

  beforeEach(async () => {
    sandbox.reset();
    receiver.calls.length = 0;
    // Evolution knows only instances an operator created.
    await createEvolutionInstance(base, INSTANCE, API_KEY);
  });

  const control = (path: string, body: unknown) => postJson(`${base}/_sandbox${path}`, body);
  const sendText = (body: unknown) =>
    postJson(`${base}/alt-a/message/sendText/${INSTANCE}`, body, { apikey: API_KEY });

  /** As the connector sets it: v2's field names, a secret header, new messages and acks. */
  function setWebhook(webhook: Json = {}) {
    return postJson(
      `${base}/alt-a/webhook/set/${INSTANCE}`,
      {
        webhook: {
          enabled: true,
          url: `${receiver.url}/hooks/evo`,
          headers: { [CALLBACK_HEADER]: 's3cret' },
          byEvents: false,
          base64: false,
          events: ['MESSAGES_UPSERT', 'MESSAGES_UPDATE'],
          ...webhook,
        },
      },
      { apikey: API_KEY },
    );
  }

  const inbound = (extra: Json = {}) =>
    control('/inbound', { channel: 'alt-a', account: INSTANCE, from: CUSTOMER, text: 'oi', ...extra });
  const payloads = () => receiver.posts().map((call) => JSON.parse(call.rawBody) as Json);

  describe('webhook/set', () => {
    it('sends the configured headers on every callback, and `apikey: null` in the body', async () => {
      expect((await setWebhook()).status).toBe(201);
      expect((await inbound({ name: 'Ana' })).status).toBe(200);
      const [call] = receiver.posts();
      expect(call?.headers[CALLBACK_HEADER]).toBe('s3cret');
      expect(call?.headers['user-agent']).toMatch(/^axios\//);
      expect(JSON.parse(call?.rawBody ?? '')).toMatchObject({ event: 'messages.upsert', apikey: null });
    });

    it('takes every event when enabled with none listed, and none when disabled', async () => {
      const all = await setWebhook({ events: [] });
      expect(((await all.json()) as { events: string[] }).events).toContain('CONNECTION_UPDATE');
      const off = await setWebhook({ enabled: false });
      expect(await off.json()).toMatchObject({ enabled: false, events: [] });
      expect((await inbound()).status).toBe(409);
    });

    it('ignores v1 field names and refuses events it does not know, in jsonschema words', async () => {
      const v1 = await setWebhook({ byEvents: undefined, webhookByEvents: true });
      expect(await v1.json()).toMatchObject({ webhookByEvents: false });

      const unknown = await setWebhook({ events: ['MESSAGES_UPSERT', 'NEW_MESSAGE'] });
      expect(unknown.status).toBe(400);
      const { response } = (await unknown.json()) as { response: { message: string[] } };
      expect(response.message).toHaveLength(1);
      expect(response.message[0]).toMatch(
        /^webhook\.events\[1\] is not one of enum values: APPLICATION_STARTUP,/,
      );

      const missing = await postJson(
        `${base}/alt-a/webhook/set/${INSTANCE}`,
        { webhook: {} },
        { apikey: API_KEY },
      );
      expect(await missing.json()).toEqual({
        status: 400,
        error: 'Bad Request',
        response: { message: ['webhook requires property "enabled"', 'webhook requires property "url"'] },
      });
    });

    it('keeps a URL its emit would never call, and then delivers nothing', async () => {
      expect((await setWebhook({ url: 'connector.local/hooks' })).status).toBe(201);
      expect((await inbound()).status).toBe(409);
    });

    it('lists the registration with its headers and events', async () => {
      await setWebhook();
      expect(await (await fetch(`${base}/_sandbox/webhooks?channel=alt-a`)).json()).toEqual([
        {
          channel: 'alt-a',
          account: INSTANCE,
          url: `${receiver.url}/hooks/evo`,
          headers: { [CALLBACK_HEADER]: 's3cret' },
          events: ['MESSAGES_UPSERT', 'MESSAGES_UPDATE'],
        },
      ]);
    });
  });

  describe('messages.upsert', () => {
    it('sends `pushName: null` for a sender without a profile name', async () => {
      await setWebhook();
      await inbound();
      expect(payloads()[0]).toMatchObject({
        data: { pushName: null, key: { remoteJid: `${CUSTOMER}@s.whatsapp.net` } },
      });
    });

    it('names a Mexican and an Argentine mobile as WhatsApp does, with the digit after the country code', async () => {
      await setWebhook();
      await inbound({ from: '525512345678' });
      await inbound({ from: '5491123456789' });
      expect(payloads().map((payload) => ((payload.data as Json).key as Json).remoteJid)).toEqual([
        '5215512345678@s.whatsapp.net',
        '5491123456789@s.whatsapp.net',
      ]);
      // A send to the form without it answers with the JID Evolution verified.
      const answer = (await (await sendText({ number: '541123456789', text: 'hola' })).json()) as Json;
      expect(answer.key).toMatchObject({ remoteJid: '5491123456789@s.whatsapp.net', fromMe: true });
    });

    it('names a LID-addressed chat by its number twice, as Evolution 2.3.7 writes it over the LID', async () => {
      await setWebhook();
      await inbound({ addressing_mode: 'lid' });
      const [key] = payloads().map((payload) => (payload.data as { key: Json }).key);
      expect(key).toEqual({
        remoteJid: `${CUSTOMER}@s.whatsapp.net`,
        fromMe: false,
        id: expect.any(String),
        remoteJidAlt: `${CUSTOMER}@s.whatsapp.net`,
        addressingMode: 'lid',
      });
    });

    it('keeps one LID per contact, in the phone-addressed key and the LID-only one', async () => {
      await setWebhook();
      await inbound();
      await inbound({ addressing_mode: 'lid-only', text: 'de novo' });
      const [byNumber, byLid] = payloads().map((payload) => (payload.data as { key: Json }).key);
      expect(byNumber?.remoteJidAlt).toMatch(/^\d{14}@lid$/);
      expect(byLid?.remoteJid).toBe(byNumber?.remoteJidAlt);
    });

    it('names a chat WhatsApp sent no number for by its LID alone, and sends to that LID', async () => {
      await setWebhook();
      await inbound({ addressing_mode: 'lid-only' });
      const key = (payloads()[0]!.data as { key: Json }).key;
      expect(key).toEqual({
        remoteJid: expect.stringMatching(/^\d{14}@lid$/),
        fromMe: false,
        id: expect.any(String),
        addressingMode: 'lid',
      });
      const answer = await sendText({ number: key.remoteJid, text: 'olá' });
      expect(answer.status).toBe(201);
      expect(((await answer.json()) as Json).key).toMatchObject({ remoteJid: key.remoteJid, fromMe: true });
    });

    it('writes a group message with the group as the chat and the sender as participant', async () => {
      await setWebhook();
      await inbound({ group_id: '120363025246125486' });
      expect(payloads()[0]).toMatchObject({
        data: {
          key: { remoteJid: '120363025246125486@g.us', participant: `${CUSTOMER}@s.whatsapp.net` },
          // prepareMessage falls back to the participant's number.
          pushName: CUSTOMER,
        },
      });
    });

    it('delivers the very same callback again on repeat, as its retries would', async () => {
      await setWebhook();
      const res = await inbound({ repeat: 2 });
      expect(await res.json()).toMatchObject({ delivered_statuses: [200, 200] });
      const [one, two] = receiver.posts();
      expect(one?.rawBody).toBe(two?.rawBody);
    });

    it('says when the webhook is not subscribed to the event', async () => {
      await setWebhook({ events: ['MESSAGES_UPDATE'] });
      const res = await inbound();
      expect(res.status).toBe(409);
      expect(await res.json()).toEqual({
        error: `alt-a account ${INSTANCE} webhook is not subscribed to MESSAGES_UPSERT`,
      });
    });
  });

  describe('messages.update', () => {
    it('reports the acks of its own sends: SERVER_ACK, DELIVERY_ACK, READ, ERROR', async () => {
      await setWebhook();
      const sentKey = (
        (await (await sendText({ number: CUSTOMER, text: 'x' })).json()) as { key: { id: string } }
      ).key;
      for (const status of ['sent', 'delivered', 'read', 'failed']) {
        const res = await control('/status', {
          channel: 'alt-a',
          account: INSTANCE,
          message_id: sentKey.id,
          status,
        });
        expect(res.status).toBe(200);
      }
      expect(payloads().map((payload) => (payload.data as Json).status)).toEqual([
        'SERVER_ACK',
        'DELIVERY_ACK',
        'READ',
        'ERROR',
      ]);
      expect(payloads()[0]).toMatchObject({
        event: 'messages.update',
        instance: INSTANCE,
        data: {
          keyId: sentKey.id,
          remoteJid: `${CUSTOMER}@s.whatsapp.net`,
          fromMe: true,
          status: 'SERVER_ACK',
          instanceId: expect.any(String),
          messageId: expect.stringMatching(/^c[0-9a-z]{24}$/),
        },
        apikey: null,
      });
      const unknown = await control('/status', {
        channel: 'alt-a',
        account: INSTANCE,
        message_id: 'NOPE',
        status: 'read',
      });
      expect(unknown.status).toBe(404);
    });
  });

  describe('a disconnected or logged-out instance', () => {
    it('fails a send to a number never checked with 500, and to a known one with 400', async () => {
      expect((await sendText({ number: CUSTOMER, text: 'antes' })).status).toBe(201);
      await control('/accounts', { channel: 'alt-a', account: INSTANCE, state: 'disconnected' });

      const known = await sendText({ number: CUSTOMER, text: 'depois' });
      expect(known.status).toBe(400);
      expect(await known.json()).toEqual({
        status: 400,
        error: 'Bad Request',
        response: { message: ['Error: Connection Closed'] },
      });

      await control('/accounts', { channel: 'alt-a', account: INSTANCE, state: 'logged_out' });
      const unknown = await sendText({ number: '5511900000001', text: 'novo' });
      expect(unknown.status).toBe(500);
      expect(await unknown.json()).toEqual({
        status: 500,
        error: 'Internal Server Error',
        response: { message: 'Connection Closed' },
      });
      // Only the send made while connected reached WhatsApp.
      expect(await (await fetch(`${base}/_sandbox/sent`)).json()).toHaveLength(1);
    });

    it('receives nothing until connected again', async () => {
      await setWebhook();
      await control('/accounts', { channel: 'alt-a', account: INSTANCE, state: 'disconnected' });
      expect((await inbound()).status).toBe(409);
      await control('/accounts', { channel: 'alt-a', account: INSTANCE, state: 'connected' });
      expect((await inbound()).status).toBe(200);
      expect(receiver.posts()).toHaveLength(1);
    });
  });

  it('refuses a send to a number with no WhatsApp with its check, in the JID createJid writes', async () => {
    // A Belo Horizonte mobile: WhatsApp would name it without its ninth digit, and so does createJid.
    await control('/without-whatsapp', { number: '+55 31 98888-7777' });
    const absent = await sendText({ number: '+5531988887777', text: 'olá' });
    expect(absent.status).toBe(400);
    expect(await absent.json()).toEqual({
      status: 400,
      error: 'Bad Request',
      response: {
        message: [{ jid: '553188887777@s.whatsapp.net', exists: false, number: '+5531988887777' }],
      },
    });
    // The same account written without the ninth digit is just as absent; a Mexican one keeps no 1.
    expect((await sendText({ number: '553188887777', text: 'olá' })).status).toBe(400);
    await control('/without-whatsapp', { number: '525512345678' });
    expect(await (await sendText({ number: '5215512345678', text: 'hola' })).json()).toMatchObject({
      response: { message: [{ jid: '525512345678@s.whatsapp.net', exists: false, number: '5215512345678' }] },
    });
    expect(await (await fetch(`${base}/_sandbox/sent`)).json()).toEqual([]);
    expect((await sendText({ number: CUSTOMER, text: 'olá' })).status).toBe(201);
  });

  it("answers a rate-limit fault as Baileys' rate-overlimit: 400, and no retry hint", async () => {
    expect((await control('/faults', { channel: 'alt-a', mode: 'rate_limit' })).status).toBe(200);
    const res = await sendText({ number: CUSTOMER, text: 'x' });
    expect(res.status).toBe(400);
    expect(res.headers.get('retry-after')).toBeNull();
    expect(await res.json()).toEqual({
      status: 400,
      error: 'Bad Request',
      response: { message: ['Error: rate-overlimit'] },
    });
  });
});

describe("alt-a: Evolution's redelivery of a webhook its receiver did not take", () => {
  // Evolution's own waits (5 s, doubling) times a thousandth.
  const env = sandboxAndReceiver({ redeliveryDelayScale: 0.001 });
  const { sandbox } = env;
  let base = '';
  let receiver: Receiver;
  beforeEach(async () => {
    ({ base, receiver } = env);
    await createEvolutionInstance(base, INSTANCE, API_KEY);
  });

  const hookTo = (url: string) =>
    postJson(
      `${base}/alt-a/webhook/set/${INSTANCE}`,
      { webhook: { enabled: true, url, events: ['MESSAGES_UPSERT'] } },
      { apikey: API_KEY },
    );
  const inbound = async () =>
    (await postJson(`${base}/_sandbox/inbound`, {
      channel: 'alt-a',
      account: INSTANCE,
      from: CUSTOMER,
      text: 'oi',
    })) as Response;
  const redeliveries = async () =>
    (await (await fetch(`${base}/_sandbox/redeliveries?channel=alt-a`)).json()) as Array<{
      attempt: number;
      status: number | null;
    }>;

  it('delivers the same bytes again after any other answer, until one is 2xx', async () => {
    expect((await hookTo(`${receiver.url}/hooks/evo`)).status).toBe(201);
    receiver.answers.push(503, 429, 413);
    const answer = await inbound();
    expect(await answer.json()).toMatchObject({ ok: true, delivered_status: 503, redelivering: true });
    await sandbox.redelivered();
    const bodies = receiver.posts().map((call) => call.rawBody);
    expect(bodies).toHaveLength(4);
    expect(new Set(bodies).size).toBe(1);
    expect(await redeliveries()).toEqual([
      expect.objectContaining({ attempt: 2, status: 429 }),
      expect.objectContaining({ attempt: 3, status: 413 }),
      expect.objectContaining({ attempt: 4, status: 200 }),
    ]);
  });

  it.each([400, 401, 403, 404, 422])('gives up at once on a %i', async (status) => {
    await hookTo(`${receiver.url}/hooks/evo`);
    receiver.answers.push(status);
    const answer = (await (await inbound()).json()) as Record<string, unknown>;
    expect(answer).toMatchObject({ delivered_status: status });
    expect(answer.redelivering).toBeUndefined();
    await sandbox.redelivered();
    expect(receiver.posts()).toHaveLength(1);
  });

  it('delivers ten times in all, then gives up', async () => {
    await hookTo(`${receiver.url}/hooks/evo`);
    receiver.answers.push(...Array(12).fill(500));
    await inbound();
    await sandbox.redelivered();
    expect(receiver.posts()).toHaveLength(10);
    expect((await redeliveries()).at(-1)).toMatchObject({ attempt: 10, status: 500 });
  });

  it('tries a receiver it cannot reach again too', async () => {
    const gone = await startReceiver();
    await close(gone.server);
    await hookTo(`${gone.url}/hooks/evo`);
    expect((await inbound()).status).toBe(502);
    await sandbox.redelivered();
    const made = await redeliveries();
    expect(made).toHaveLength(9);
    expect(made.every((entry) => entry.status === null)).toBe(true);
  });

  it('stops redelivering at a reset, without waiting for the next try', async () => {
    const patient = createSandbox({ httpCallbacks: 'allow' });
    const { server, url } = await listen(patient);
    try {
      await createEvolutionInstance(url, INSTANCE, API_KEY);
      await postJson(
        `${url}/alt-a/webhook/set/${INSTANCE}`,
        { webhook: { enabled: true, url: `${receiver.url}/hooks/evo`, events: ['MESSAGES_UPSERT'] } },
        { apikey: API_KEY },
      );
      receiver.answers.push(503);
      const answer = await postJson(`${url}/_sandbox/inbound`, {
        channel: 'alt-a',
        account: INSTANCE,
        from: CUSTOMER,
        text: 'oi',
      });
      expect(await answer.json()).toMatchObject({ delivered_status: 503, redelivering: true });
      // Evolution's first wait is 5 s; a reset ends it now.
      patient.reset();
      const settled = await Promise.race([
        patient.redelivered().then(() => 'settled'),
        new Promise((resolve) => setTimeout(resolve, 2_000, 'still waiting')),
      ]);
      expect(settled).toBe('settled');
      expect(receiver.posts()).toHaveLength(1);
    } finally {
      await close(server);
    }
  });
});
