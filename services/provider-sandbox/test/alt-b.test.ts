import type { Server } from 'node:http';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createSandbox } from '../src/index.js';
import { close, listen, postJson, type Receiver, startReceiver } from './support.js';

const INSTANCE = '3C9A-instance';
const INSTANCE_TOKEN = 'F1A2B3-instance-token';
const CLIENT_TOKEN = 'client-token-1';
const CUSTOMER = '5511988887777';
const ZAPI_ID = /^[0-9A-F]{32}$/;
const NOT_ALLOWED = { error: 'Client-Token not allowed' };

describe('alt-b (Z-API) emulation', () => {
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

  beforeEach(() => {
    sandbox.reset();
    receiver.calls.length = 0;
  });

  const instancePath = (instance = INSTANCE, token = INSTANCE_TOKEN) =>
    `${base}/alt-b/instances/${instance}/token/${token}`;

  /** `null` sends no Client-Token header at all. */
  function sendText(
    body: unknown,
    clientToken: string | null = CLIENT_TOKEN,
    instance = INSTANCE,
    token = INSTANCE_TOKEN,
  ) {
    return postJson(
      `${instancePath(instance, token)}/send-text`,
      body,
      clientToken === null ? {} : { 'client-token': clientToken },
    );
  }

  function setWebhook(value: unknown, clientToken: string | null = CLIENT_TOKEN) {
    return fetch(`${instancePath()}/update-webhook-received`, {
      method: 'PUT',
      headers: {
        'content-type': 'application/json',
        ...(clientToken === null ? {} : { 'client-token': clientToken }),
      },
      body: JSON.stringify({ value }),
    });
  }

  const control = (path: string, body: unknown) => postJson(`${base}/_sandbox${path}`, body);

  async function sent(query = ''): Promise<Array<Record<string, unknown>>> {
    const res = await fetch(`${base}/_sandbox/sent${query}`);
    expect(res.status).toBe(200);
    return (await res.json()) as Array<Record<string, unknown>>;
  }

  describe('send-text', () => {
    it('answers 200 with Z-API ids and records the request', async () => {
      const body = { phone: CUSTOMER, message: 'olá' };
      const res = await sendText(body);
      expect(res.status).toBe(200);
      const answer = (await res.json()) as { zaapId: string; messageId: string; id: string };
      expect(answer).toEqual({
        zaapId: expect.stringMatching(ZAPI_ID),
        messageId: expect.stringMatching(ZAPI_ID),
        id: answer.messageId,
      });
      expect(answer.zaapId).not.toBe(answer.messageId);

      expect(await sent('?channel=alt-b')).toEqual([
        {
          channel: 'alt-b',
          account: INSTANCE,
          to: CUSTOMER,
          method: 'POST',
          path: `/alt-b/instances/${INSTANCE}/token/${INSTANCE_TOKEN}/send-text`,
          body,
          provider_message_id: answer.messageId,
          received_at: expect.any(String),
        },
      ]);
      expect(await sent('?channel=alt-a')).toEqual([]);
    });

    it('refuses a call without Client-Token with 401', async () => {
      const res = await sendText({ phone: CUSTOMER, message: 'x' }, null);
      expect(res.status).toBe(401);
      expect(await res.json()).toEqual(NOT_ALLOWED);
      expect(await sent()).toEqual([]);
    });

    it('refuses a Client-Token or an instance token other than the first seen, with the same 401', async () => {
      expect((await sendText({ phone: CUSTOMER, message: 'first' })).status).toBe(200);

      const otherClient = await sendText({ phone: CUSTOMER, message: 'x' }, 'other-client-token');
      expect(otherClient.status).toBe(401);
      expect(await otherClient.json()).toEqual(NOT_ALLOWED);

      const otherToken = await sendText({ phone: CUSTOMER, message: 'x' }, CLIENT_TOKEN, INSTANCE, 'other');
      expect(otherToken.status).toBe(401);
      expect(await otherToken.json()).toEqual(NOT_ALLOWED);

      // Another instance has its own credentials.
      expect(
        (await sendText({ phone: CUSTOMER, message: 'x' }, 'other-client-token', 'inst-2', 'tok-2')).status,
      ).toBe(200);
      expect(await sent()).toHaveLength(2);
    });

    it.each([
      [{ message: 'x' }, 'phone is required'],
      [{ phone: '+55 11 98888-7777', message: 'x' }, 'phone must contain digits only'],
      [{ phone: CUSTOMER }, 'message is required'],
      [{ phone: CUSTOMER, message: '' }, 'message must not be empty'],
    ])('answers 400 for an invalid body %j', async (body, problem) => {
      const res = await sendText(body);
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({ error: problem });
      expect(await sent()).toEqual([]);
    });

    it('answers faults with the given status, 500 by default, until turned off', async () => {
      await control('/faults', { channel: 'alt-b', mode: 'error', status: 503 });
      const failed = await sendText({ phone: CUSTOMER, message: 'x' });
      expect(failed.status).toBe(503);
      expect(await failed.json()).toEqual({ error: 'Internal server error' });

      await control('/faults', { channel: 'alt-b', account: INSTANCE, mode: 'error' });
      const defaulted = await sendText({ phone: CUSTOMER, message: 'x' });
      expect(defaulted.status).toBe(500);
      expect(await defaulted.json()).toEqual({ error: 'Internal server error' });

      await control('/faults', { channel: 'alt-b', mode: 'off' });
      expect((await sendText({ phone: CUSTOMER, message: 'x' })).status).toBe(200);
      expect(await sent()).toHaveLength(1);
    });
  });

  describe('webhook and inbound', () => {
    it('registers the received webhook and delivers ReceivedCallback with the Client-Token', async () => {
      const set = await setWebhook(`${receiver.url}/hooks/zapi`);
      expect(set.status).toBe(200);
      expect(await set.json()).toEqual({ value: true });

      const before = Date.now();
      const res = await control('/inbound', {
        channel: 'alt-b',
        account: INSTANCE,
        from: '+55 11 98888-7777',
        name: 'Bia',
        text: 'tem estoque?',
      });
      expect(res.status).toBe(200);
      const answer = (await res.json()) as { provider_message_id: string };
      expect(answer).toEqual({
        ok: true,
        delivered_status: 200,
        provider_message_id: expect.stringMatching(ZAPI_ID),
      });

      const [webhook] = receiver.posts();
      expect(webhook?.url).toBe('/hooks/zapi');
      expect(webhook?.headers['client-token']).toBe(CLIENT_TOKEN);
      expect(webhook?.headers['content-type']).toBe('application/json');
      const payload = JSON.parse(webhook?.rawBody ?? '') as { momment: number };
      expect(payload).toEqual({
        isStatusReply: false,
        instanceId: INSTANCE,
        messageId: answer.provider_message_id,
        phone: CUSTOMER,
        fromMe: false,
        momment: expect.any(Number),
        status: 'RECEIVED',
        chatName: 'Bia',
        senderName: 'Bia',
        type: 'ReceivedCallback',
        text: { message: 'tem estoque?' },
      });
      expect(payload.momment).toBeGreaterThanOrEqual(before);
      expect(payload.momment).toBeLessThanOrEqual(Date.now());
    });

    it('names the chat after the number when no name is given', async () => {
      await setWebhook(`${receiver.url}/hooks/zapi`);
      await control('/inbound', { channel: 'alt-b', account: INSTANCE, from: CUSTOMER, text: 'oi' });
      expect(JSON.parse(receiver.posts()[0]?.rawBody ?? '')).toMatchObject({
        chatName: CUSTOMER,
        senderName: '',
      });
    });

    it('answers 409 when the instance has no webhook', async () => {
      const res = await control('/inbound', {
        channel: 'alt-b',
        account: INSTANCE,
        from: CUSTOMER,
        text: 'oi',
      });
      expect(res.status).toBe(409);
      expect(await res.json()).toEqual({ error: `no webhook registered for alt-b account ${INSTANCE}` });
      expect(receiver.calls).toEqual([]);
    });

    it('requires credentials and a URL to register the webhook', async () => {
      const noToken = await setWebhook(`${receiver.url}/hooks/zapi`, null);
      expect(noToken.status).toBe(401);
      expect(await noToken.json()).toEqual(NOT_ALLOWED);

      const notUrl = await setWebhook('somewhere');
      expect(notUrl.status).toBe(400);
      expect(((await notUrl.json()) as { error: string }).error).toContain('value');

      const inbound = await control('/inbound', {
        channel: 'alt-b',
        account: INSTANCE,
        from: CUSTOMER,
        text: 'oi',
      });
      expect(inbound.status).toBe(409);
    });
  });

  it('forgets sends, faults, webhooks and tokens on reset', async () => {
    await setWebhook(`${receiver.url}/hooks/zapi`);
    expect((await sendText({ phone: CUSTOMER, message: 'x' })).status).toBe(200);
    await control('/faults', { channel: 'alt-b', mode: 'error' });

    expect((await control('/reset', {})).status).toBe(200);

    expect(await sent()).toEqual([]);
    expect(
      (await sendText({ phone: CUSTOMER, message: 'again' }, 'new-client-token', INSTANCE, 'new-token'))
        .status,
    ).toBe(200);
    const inbound = await control('/inbound', {
      channel: 'alt-b',
      account: INSTANCE,
      from: CUSTOMER,
      text: 'oi',
    });
    expect(inbound.status).toBe(409);
  });
});
