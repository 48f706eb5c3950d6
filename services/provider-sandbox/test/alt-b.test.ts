import type { Server } from 'node:http';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createSandbox } from '../src/index.js';
import { close, listen, postJson, type Receiver, startReceiver } from './support.js';

const INSTANCE = '3C9A-instance';
const INSTANCE_TOKEN = 'F1A2B3-instance-token';
const CLIENT_TOKEN = 'client-token-1';
const CUSTOMER = '5511988887777';
const ZAAP_ID = /^[0-9A-F]{32}$/;
const WHATSAPP_ID = /^3EB0[0-9A-F]{16}$/;

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
  const tokenHeader = (clientToken: string | null): Record<string, string> =>
    clientToken === null ? {} : { 'client-token': clientToken };

  /** `null` sends no Client-Token header at all, as an account without the security token does. */
  function sendText(
    body: unknown,
    clientToken: string | null = null,
    instance = INSTANCE,
    token = INSTANCE_TOKEN,
  ) {
    return postJson(`${instancePath(instance, token)}/send-text`, body, tokenHeader(clientToken));
  }

  function setWebhook(value: unknown, which = 'update-webhook-received', clientToken: string | null = null) {
    return fetch(`${instancePath()}/${which}`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json', ...tokenHeader(clientToken) },
      body: JSON.stringify({ value }),
    });
  }

  const instanceStatus = async (clientToken: string | null = null) => {
    const res = await fetch(`${instancePath()}/status`, { headers: tokenHeader(clientToken) });
    return { status: res.status, body: await res.json() };
  };

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
      // send-message-text: `zaapId` is Z-API's id, `messageId` WhatsApp's; `id` repeats it for Zapier.
      expect(answer).toEqual({
        zaapId: expect.stringMatching(ZAAP_ID),
        messageId: expect.stringMatching(WHATSAPP_ID),
        id: answer.messageId,
      });

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

    it('takes calls without Client-Token until the account uses one (the security token is off by default)', async () => {
      expect((await sendText({ phone: CUSTOMER, message: 'sem token' })).status).toBe(200);
      expect((await sendText({ phone: CUSTOMER, message: 'com token' }, CLIENT_TOKEN)).status).toBe(200);

      // Now on: its absence is refused as security/client-token documents.
      const missing = await sendText({ phone: CUSTOMER, message: 'x' });
      expect(missing.status).toBe(401);
      expect(await missing.json()).toEqual({ error: 'null not allowed' });

      const other = await sendText({ phone: CUSTOMER, message: 'x' }, 'other-client-token');
      expect(other.status).toBe(401);
      expect(await other.json()).toEqual({ error: 'other-client-token not allowed' });

      const otherPathToken = await sendText(
        { phone: CUSTOMER, message: 'x' },
        CLIENT_TOKEN,
        INSTANCE,
        'other',
      );
      expect(otherPathToken.status).toBe(401);
      expect(await otherPathToken.json()).toEqual({ error: 'other not allowed' });

      // Another instance has its own credentials.
      expect((await sendText({ phone: CUSTOMER, message: 'x' }, 'token-2', 'inst-2', 'tok-2')).status).toBe(
        200,
      );
      expect(await sent()).toHaveLength(3);
    });

    it.each([
      [{ message: 'x' }, 'phone is required'],
      [{ phone: '+55 11 98888-7777', message: 'x' }, 'phone must contain digits only, or be an @lid'],
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

    it('refuses a rate-limit fault: Z-API documents no such answer (it queues and paces sends)', async () => {
      const res = await control('/faults', { channel: 'alt-b', mode: 'rate_limit' });
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({ error: 'alt-b documents no rate-limit answer to emulate' });
    });
  });

  describe('a disconnected or logged-out instance', () => {
    it('reports its state on GET /status', async () => {
      expect(await instanceStatus()).toEqual({
        status: 200,
        body: { connected: true, error: 'You are already connected.', smartphoneConnected: true },
      });
      await control('/accounts', { channel: 'alt-b', account: INSTANCE, state: 'disconnected' });
      expect((await instanceStatus()).body).toEqual({
        connected: false,
        error: 'You need to restore the session.',
        smartphoneConnected: false,
      });
      await control('/accounts', { channel: 'alt-b', account: INSTANCE, state: 'logged_out' });
      expect((await instanceStatus()).body).toMatchObject({
        connected: false,
        error: 'You are not connected.',
      });
    });

    it('queues sends with ids, sends them once connected again, and receives nothing meanwhile', async () => {
      await setWebhook(`${receiver.url}/hooks/zapi`);
      await control('/accounts', { channel: 'alt-b', account: INSTANCE, state: 'disconnected' });

      const queued = await sendText({ phone: CUSTOMER, message: 'na fila' });
      expect(queued.status).toBe(200);
      const { messageId } = (await queued.json()) as { messageId: string };
      expect(await sent()).toEqual([]);

      const inbound = await control('/inbound', {
        channel: 'alt-b',
        account: INSTANCE,
        from: CUSTOMER,
        text: 'oi',
      });
      expect(inbound.status).toBe(409);
      expect(await inbound.json()).toEqual({
        error: `alt-b account ${INSTANCE} is disconnected: WhatsApp tells it nothing`,
      });
      expect(receiver.calls).toEqual([]);

      await control('/accounts', { channel: 'alt-b', account: INSTANCE, state: 'connected' });
      expect((await sent()).map((entry) => entry.provider_message_id)).toEqual([messageId]);
    });

    it('refuses states for an unknown channel and unknown states', async () => {
      for (const body of [
        { channel: 'alt-b', account: INSTANCE, state: 'asleep' },
        { channel: 'nowhere', account: INSTANCE, state: 'connected' },
      ]) {
        expect((await control('/accounts', body)).status).toBe(400);
      }
    });
  });

  describe('webhooks', () => {
    it("delivers ReceivedCallback as the docs show it, with the instance's token in z-api-token", async () => {
      const set = await setWebhook(`${receiver.url}/hooks/zapi?callback_token=abc`);
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
      expect(answer).toEqual({ ok: true, delivered_status: 200, provider_message_id: expect.any(String) });

      const [webhook] = receiver.posts();
      expect(webhook?.url).toBe('/hooks/zapi?callback_token=abc');
      expect(webhook?.headers['content-type']).toBe('application/json');
      expect(webhook?.headers['content-encoding']).toBe('gzip');
      expect(webhook?.headers['client-token']).toBeUndefined();
      expect(webhook?.headers['z-api-token']).toBe(INSTANCE_TOKEN);
      const payload = JSON.parse(webhook?.rawBody ?? '') as { momment: number };
      expect(payload).toEqual({
        isStatusReply: false,
        senderLid: expect.stringMatching(/^\d{14}@lid$/),
        chatLid: expect.stringMatching(/^\d{14}@lid$/),
        connectedPhone: expect.stringMatching(/^55\d{11}$/),
        waitingMessage: false,
        isEdit: false,
        isGroup: false,
        isNewsletter: false,
        instanceId: INSTANCE,
        messageId: answer.provider_message_id,
        phone: CUSTOMER,
        fromMe: false,
        momment: expect.any(Number),
        status: 'RECEIVED',
        chatName: 'Bia',
        senderPhoto: null,
        senderName: 'Bia',
        participantPhone: null,
        participantLid: null,
        photo: null,
        broadcast: false,
        type: 'ReceivedCallback',
        text: { message: 'tem estoque?' },
      });
      expect(payload.momment).toBeGreaterThanOrEqual(before);
    });

    it('names the sender by number when there is no name, and writes group messages as Z-API does', async () => {
      await setWebhook(`${receiver.url}/hooks/zapi`);
      await control('/inbound', { channel: 'alt-b', account: INSTANCE, from: CUSTOMER, text: 'oi' });
      await control('/inbound', {
        channel: 'alt-b',
        account: INSTANCE,
        from: CUSTOMER,
        text: 'no grupo',
        group_id: '120363019502650977',
      });
      const [direct, group] = receiver
        .posts()
        .map((call) => JSON.parse(call.rawBody) as Record<string, unknown>);
      expect(direct).toMatchObject({ chatName: CUSTOMER, senderName: CUSTOMER, isGroup: false });
      expect(group).toMatchObject({
        isGroup: true,
        phone: '120363019502650977-group',
        participantPhone: CUSTOMER,
        participantLid: expect.stringMatching(/@lid$/),
      });
    });

    it('delivers the same callback again when asked to repeat it', async () => {
      await setWebhook(`${receiver.url}/hooks/zapi`);
      const res = await control('/inbound', {
        channel: 'alt-b',
        account: INSTANCE,
        from: CUSTOMER,
        text: 'de novo',
        repeat: 3,
      });
      expect(await res.json()).toMatchObject({ delivered_status: 200, delivered_statuses: [200, 200, 200] });
      const bodies = receiver.posts().map((call) => call.rawBody);
      expect(bodies).toHaveLength(3);
      expect(new Set(bodies).size).toBe(1);
    });

    it('reports statuses of its own sends as MessageStatusCallback, and a failed send as DeliveryCallback', async () => {
      await setWebhook(`${receiver.url}/hooks/status`, 'update-webhook-message-status');
      const { messageId } = (await (await sendText({ phone: CUSTOMER, message: 'x' })).json()) as {
        messageId: string;
      };
      const before = Date.now();
      for (const status of ['sent', 'delivered', 'read']) {
        const res = await control('/status', {
          channel: 'alt-b',
          account: INSTANCE,
          message_id: messageId,
          status,
        });
        expect(res.status).toBe(200);
      }
      const payloads = receiver.posts().map((call) => JSON.parse(call.rawBody) as { momment: number });
      expect(payloads.map((payload) => (payload as unknown as { status: string }).status)).toEqual([
        'SENT',
        'RECEIVED',
        'READ',
      ]);
      expect(payloads[0]).toEqual({
        instanceId: INSTANCE,
        status: 'SENT',
        ids: [messageId],
        momment: expect.any(Number),
        phoneDevice: 0,
        phone: CUSTOMER,
        type: 'MessageStatusCallback',
        isGroup: false,
      });
      expect(payloads[0]!.momment).toBeGreaterThanOrEqual(before);

      const failure = { channel: 'alt-b', account: INSTANCE, message_id: messageId, status: 'failed' };
      // MessageStatusCallback has no failed status: without the on-send webhook nobody is told.
      expect((await control('/status', failure)).status).toBe(409);
      await setWebhook(`${receiver.url}/hooks/delivery`, 'update-webhook-delivery');
      expect((await control('/status', failure)).status).toBe(200);
      expect(JSON.parse(receiver.posts()[3]!.rawBody)).toEqual({
        phone: CUSTOMER,
        messageId,
        instanceId: INSTANCE,
        zaapId: expect.stringMatching(/^[0-9A-F]{32}$/),
        momment: expect.any(Number),
        type: 'DeliveryCallback',
        error: 'Phone number does not exist',
      });
      const unknown = await control('/status', {
        channel: 'alt-b',
        account: INSTANCE,
        message_id: 'NOPE',
        status: 'read',
      });
      expect(unknown.status).toBe(404);
      expect(receiver.posts()).toHaveLength(4);
    });

    it('answers a send to a number with no WhatsApp as any other, then posts its DeliveryCallback with the error', async () => {
      await setWebhook(`${receiver.url}/hooks/delivery`, 'update-webhook-delivery');
      await control('/without-whatsapp', { number: CUSTOMER });
      const res = await sendText({ phone: CUSTOMER, message: 'olá' });
      expect(res.status).toBe(200);
      const { messageId } = (await res.json()) as { messageId: string };
      await sandbox.idle();
      expect(receiver.posts().map((call) => JSON.parse(call.rawBody))).toEqual([
        expect.objectContaining({
          messageId,
          type: 'DeliveryCallback',
          error: 'Phone number does not exist',
        }),
      ]);
      // One queued while disconnected fails once it is sent, on reconnection.
      await control('/accounts', { channel: 'alt-b', account: INSTANCE, state: 'disconnected' });
      const queued = (await (await sendText({ phone: CUSTOMER, message: 'de novo' })).json()) as {
        messageId: string;
      };
      await sandbox.idle();
      expect(receiver.posts()).toHaveLength(1);
      await control('/accounts', { channel: 'alt-b', account: INSTANCE, state: 'connected' });
      await sandbox.idle();
      expect(JSON.parse(receiver.posts()[1]!.rawBody)).toMatchObject({
        messageId: queued.messageId,
        error: 'Phone number does not exist',
      });
    });

    it('sends received messages to the sent-by-me webhook once it is set, in place of the received one', async () => {
      await setWebhook(`${receiver.url}/hooks/received`);
      await control('/inbound', { channel: 'alt-b', account: INSTANCE, from: CUSTOMER, text: 'um' });
      await setWebhook(`${receiver.url}/hooks/both`, 'update-webhook-received-delivery');
      await control('/inbound', { channel: 'alt-b', account: INSTANCE, from: CUSTOMER, text: 'dois' });
      expect(receiver.posts().map((call) => call.url)).toEqual(['/hooks/received', '/hooks/both']);
    });

    it('names a Brazilian mobile in area codes 31 and above as WhatsApp does, without its ninth digit', async () => {
      await setWebhook(`${receiver.url}/hooks/zapi`);
      await control('/inbound', { channel: 'alt-b', account: INSTANCE, from: '5531988887777', text: 'oi' });
      expect(JSON.parse(receiver.posts()[0]!.rawBody)).toMatchObject({
        phone: '553188887777',
        chatName: '553188887777',
      });
    });

    it('lists what each instance registered', async () => {
      await setWebhook(`${receiver.url}/received?callback_token=t`);
      await setWebhook(`${receiver.url}/status?callback_token=t`, 'update-webhook-message-status');
      const res = await fetch(`${base}/_sandbox/webhooks?channel=alt-b&account=${INSTANCE}`);
      expect(await res.json()).toEqual([
        {
          channel: 'alt-b',
          account: INSTANCE,
          url: `${receiver.url}/received?callback_token=t`,
          headers: {},
          events: ['ReceivedCallback'],
        },
        {
          channel: 'alt-b',
          account: INSTANCE,
          url: `${receiver.url}/status?callback_token=t`,
          headers: {},
          events: ['MessageStatusCallback'],
        },
      ]);
      expect(await (await fetch(`${base}/_sandbox/webhooks?channel=alt-b&account=other`)).json()).toEqual([]);
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

    it('needs consistent credentials and a URL to register a webhook', async () => {
      expect(
        (await setWebhook(`${receiver.url}/hooks/zapi`, 'update-webhook-received', CLIENT_TOKEN)).status,
      ).toBe(200);
      const noToken = await setWebhook(`${receiver.url}/hooks/zapi`);
      expect(noToken.status).toBe(401);
      expect(await noToken.json()).toEqual({ error: 'null not allowed' });

      const notUrl = await setWebhook('somewhere', 'update-webhook-received', CLIENT_TOKEN);
      expect(notUrl.status).toBe(400);
      expect(((await notUrl.json()) as { error: string }).error).toContain('value');
    });
  });

  it('forgets sends, faults, webhooks, states and tokens on reset', async () => {
    await setWebhook(`${receiver.url}/hooks/zapi`, 'update-webhook-received', CLIENT_TOKEN);
    expect((await sendText({ phone: CUSTOMER, message: 'x' }, CLIENT_TOKEN)).status).toBe(200);
    await control('/faults', { channel: 'alt-b', mode: 'error' });
    await control('/accounts', { channel: 'alt-b', account: INSTANCE, state: 'logged_out' });

    expect((await control('/reset', {})).status).toBe(200);

    expect(await sent()).toEqual([]);
    // The old tokens are unbound: new ones are taken, and no Client-Token is required again.
    expect((await sendText({ phone: CUSTOMER, message: 'again' }, null, INSTANCE, 'new-token')).status).toBe(
      200,
    );
    const connected = await fetch(`${instancePath(INSTANCE, 'new-token')}/status`);
    expect(await connected.json()).toMatchObject({ connected: true });
    const inbound = await control('/inbound', {
      channel: 'alt-b',
      account: INSTANCE,
      from: CUSTOMER,
      text: 'oi',
    });
    expect(inbound.status).toBe(409);
  });
});
