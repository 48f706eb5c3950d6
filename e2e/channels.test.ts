import { waitFor } from '@inbox/testkit';
import { describe, expect, it } from 'vitest';
import {
  eventsOf,
  evolutionConfig,
  type Json,
  officialConfig as officialConfigOf,
  sandbox,
  sentTo,
  useStack,
} from './support/fixtures.js';

const fixture = useStack();

async function workspace(name: string) {
  const ws = await fixture.stack.admin<{ workspace_id: string; api_key: string }>(
    'POST',
    '/admin/v1/workspaces',
    {
      name,
    },
  );
  await fixture.stack.admin('POST', `/admin/v1/workspaces/${ws.body.workspace_id}/webhooks`, {
    url: `${fixture.receiver.url}/${name}`,
    events: ['*'],
  });
  return { id: ws.body.workspace_id, key: ws.body.api_key };
}

const officialConfig = (account: string) => officialConfigOf(fixture.stack, account);

describe('chat-official', () => {
  it('registers its webhook, keeps the 24-hour window locally and at the provider, and takes status updates', async () => {
    const ws = await workspace('official-1');
    const config = officialConfig('pn-official-1');
    const integration = await fixture.stack.admin<Json>(
      'POST',
      `/admin/v1/workspaces/${ws.id}/integrations`,
      {
        channel: 'chat-official',
        config,
      },
    );
    // Created means the app was subscribed to the WABA and the provider accepted the callback after the
    // hub.challenge handshake.
    expect(integration.status).toBe(201);
    expect(integration.body).toMatchObject({
      channel: 'chat-official',
      provider: 'chat-official',
      status: 'connected',
      status_reason: null,
    });
    // The test stack's connector serves plain http: the sandbox takes it, Meta would not, and the answer
    // says so.
    expect(integration.body.warnings).toEqual([
      expect.stringContaining('usa http, e o provedor só aceita https; ajuste PUBLIC_CONNECTOR_URL'),
    ]);

    const message = { phone: '+5511944440001', message: 'Olá', channel: 'chat-official' };
    const closed = await fixture.stack.api<Json>('/api/v1/send-message', ws.key, message);
    expect(closed.status).toBe(400);
    expect(closed.body).toEqual({
      error:
        'Fora da janela de 24 horas: este número não interagiu nas últimas 24 horas. Use send-template para iniciar a conversa.',
      requires_template: true,
      meta_error_code: 131047,
    });
    expect(await sentTo(fixture.stack, '5511944440001', 'chat-official')).toHaveLength(0);

    // The contact writes: signed by the provider, taken in, window open.
    const inbound = await sandbox(fixture.stack, '/_sandbox/inbound', {
      channel: 'chat-official',
      account: config.phone_number_id,
      from: '5511944440001',
      name: 'Dora',
      text: 'Quero saber mais',
      app_secret: config.app_secret,
    });
    expect(inbound.status).toBe(200);
    await waitFor(() => eventsOf(fixture.receiver, ws.id, 'message.received').length === 1, {
      what: 'message.received',
    });
    expect(eventsOf(fixture.receiver, ws.id, 'message.received')[0]).toMatchObject({
      contact: { phone: '+5511944440001', name: 'Dora' },
      message: { text: 'Quero saber mais', type: 'text' },
      integration: { id: integration.body.id, provider: 'chat-official' },
    });

    const open = await fixture.stack.api<Json>('/api/v1/send-message', ws.key, message);
    expect(open.status).toBe(200);
    expect(open.body.waMessageId).toMatch(/^wamid\./);
    const [atProvider] = await sentTo(fixture.stack, '5511944440001', 'chat-official');
    expect(atProvider).toMatchObject({
      path: `/chat-official/v21.0/${config.phone_number_id}/messages`,
      body: { messaging_product: 'whatsapp', to: '5511944440001', type: 'text', text: { body: 'Olá' } },
    });

    // The window closes at the provider (25 hours ago there) while ours still holds it open: Meta
    // accepts the message, then fails it by a status callback with 131047, recorded on the message.
    await sandbox(fixture.stack, '/_sandbox/windows', {
      channel: 'chat-official',
      account: config.phone_number_id,
      number: '5511944440001',
      last_inbound_at: new Date(Date.now() - 25 * 3_600_000).toISOString(),
    });
    const lateFailure = await fixture.stack.api<Json>('/api/v1/send-message', ws.key, message);
    expect(lateFailure.status).toBe(200);
    const failed = await waitFor(
      async () => {
        const read = await fixture.stack.admin<Json & { messages: Json[] }>(
          'GET',
          `/admin/v1/workspaces/${ws.id}/conversations/${lateFailure.body.conversationId}`,
        );
        const sent = read.body.messages.find((m) => m.id === lateFailure.body.messageId);
        return sent?.delivery_status === 'failed' ? sent : undefined;
      },
      { what: 'the late 131047 failure on the message' },
    );
    expect(failed).toMatchObject({
      status: 'sent',
      provider_message_id: lateFailure.body.waMessageId,
      delivery_error_code: 131047,
      delivery_failed_at: expect.any(String),
      error: expect.stringMatching(/^131047 Re-engagement message/),
    });
    const listed = await fixture.stack.admin<{ messages: Json[] }>(
      'GET',
      `/admin/v1/workspaces/${ws.id}/messages/failed`,
    );
    expect(listed.body.messages).toEqual([
      expect.objectContaining({
        id: lateFailure.body.messageId,
        conversation_id: lateFailure.body.conversationId,
        integration: { id: integration.body.id, channel: 'chat-official' },
        delivery_error_code: 131047,
      }),
    ]);

    // Status updates are stored on the message; they only move forward.
    for (const status of ['delivered', 'read', 'delivered']) {
      expect(
        (
          await sandbox(fixture.stack, '/_sandbox/status', {
            channel: 'chat-official',
            account: config.phone_number_id,
            message_id: open.body.waMessageId,
            status,
            app_secret: config.app_secret,
          })
        ).status,
      ).toBe(200);
    }
    const conversation = await waitFor(
      async () => {
        const read = await fixture.stack.admin<Json & { messages: Json[] }>(
          'GET',
          `/admin/v1/workspaces/${ws.id}/conversations/${open.body.conversationId}`,
        );
        const sent = read.body.messages.find((m) => m.id === open.body.messageId);
        return sent?.delivery_status === 'read' ? read.body : undefined;
      },
      { what: 'the read status on the message' },
    );
    expect(conversation.messages.find((m) => m.id === open.body.messageId)).toMatchObject({
      status: 'sent',
      delivery_status: 'read',
    });
  });

  it('refuses an inbound callback signed with another secret', async () => {
    const ws = await workspace('official-2');
    const config = officialConfig('pn-official-2');
    await fixture.stack.admin('POST', `/admin/v1/workspaces/${ws.id}/integrations`, {
      channel: 'chat-official',
      config,
    });
    const forged = await sandbox(fixture.stack, '/_sandbox/inbound', {
      channel: 'chat-official',
      account: config.phone_number_id,
      from: '5511944440002',
      text: 'forjada',
      app_secret: 'not-the-app-secret',
    });
    expect(forged.body.delivered_status).toBe(401);
    const tooLate = await fixture.stack.api<Json>('/api/v1/send-message', ws.key, {
      phone: '+5511944440002',
      message: 'x',
      channel: 'chat-official',
    });
    expect(tooLate.body).toMatchObject({ requires_template: true });
  });

  it("disconnects the integration when the provider refuses its token, and keeps taking its customers' messages", async () => {
    const ws = await workspace('official-4');
    const config = officialConfig('pn-official-4');
    const integration = await fixture.stack.admin<Json>(
      'POST',
      `/admin/v1/workspaces/${ws.id}/integrations`,
      {
        channel: 'chat-official',
        config,
      },
    );
    const inbound = (text: string) =>
      sandbox(fixture.stack, '/_sandbox/inbound', {
        channel: 'chat-official',
        account: config.phone_number_id,
        from: '5511944440004',
        text,
        app_secret: config.app_secret,
      });
    expect((await inbound('Oi')).body.delivered_status).toBe(200);
    await waitFor(() => eventsOf(fixture.receiver, ws.id, 'message.received').length === 1, {
      what: 'message.received',
    });

    // The token expires at the provider (code 190).
    await sandbox(fixture.stack, '/_sandbox/chat-official/token', {
      account: config.phone_number_id,
      state: 'expired',
    });
    const message = { phone: '+5511944440004', message: 'Olá', channel: 'chat-official' };
    const refused = await fixture.stack.api<Json>('/api/v1/send-message', ws.key, message);
    expect(refused).toEqual({
      status: 502,
      body: {
        error:
          'O provedor do canal "chat-official" recusou as credenciais da integração (token expirado ou revogado, chave errada ou conta removida): a integração foi desconectada até que sejam corrigidas',
        meta_error_code: 190,
      },
    });
    const read = await fixture.stack.admin<Json>(
      'GET',
      `/admin/v1/workspaces/${ws.id}/integrations/${integration.body.id}`,
    );
    expect(read.body).toMatchObject({ status: 'disconnected', status_reason: 'credentials_rejected' });
    // Sends no longer try it...
    expect((await fixture.stack.api<Json>('/api/v1/send-message', ws.key, message)).status).toBe(404);
    // ...while the customer's messages still arrive.
    expect((await inbound('Alguém aí?')).body.delivered_status).toBe(200);
    await waitFor(() => eventsOf(fixture.receiver, ws.id, 'message.received').length === 2, {
      what: 'the second message.received',
    });
  });

  it('refuses to create an integration whose webhook the provider cannot verify', async () => {
    const ws = await workspace('official-3');
    const refused = await fixture.stack.admin<Json>('POST', `/admin/v1/workspaces/${ws.id}/integrations`, {
      channel: 'chat-official',
      config: { ...officialConfig('pn-official-3'), base_url: 'http://127.0.0.1:9/chat-official' },
    });
    expect(refused).toEqual({
      status: 502,
      body: { error: 'Falha ao registrar o webhook de entrada no provedor do canal "chat-official"' },
    });
  });
});

describe('alt-b and faults', () => {
  it('sends in its wire format, takes inbound with its client token, and one contact spans two channels', async () => {
    const ws = await workspace('altb-1');
    const altB = await fixture.stack.admin<Json>('POST', `/admin/v1/workspaces/${ws.id}/integrations`, {
      channel: 'alt-b',
      config: {
        base_url: `${fixture.stack.sandboxUrl}/alt-b`,
        instance_id: 'inst-1',
        token: 'tok-1',
        client_token: 'ct-1',
      },
    });
    expect(altB.status).toBe(201);
    // Z-API only calls HTTPS callback URLs, and the test stack's connector is on http.
    expect(altB.body.warnings).toEqual([
      expect.stringMatching(
        /canal "alt-b" o recusaria: a URL de callback http:\/\/\S+ usa http, e o provedor só aceita https/,
      ),
    ]);
    await fixture.stack.admin('POST', `/admin/v1/workspaces/${ws.id}/integrations`, {
      channel: 'alt-a',
      config: await evolutionConfig(fixture.stack, 'altb-1-a', 'k'),
    });

    const viaB = await fixture.stack.api<Json>('/api/v1/send-message', ws.key, {
      phone: '11 95555-0001',
      message: 'por B',
      channel: 'alt-b',
    });
    expect(viaB.body).toMatchObject({ success: true, contactCreated: true, conversationCreated: true });
    const viaA = await fixture.stack.api<Json>('/api/v1/send-message', ws.key, {
      phone: '+5511955550001',
      message: 'por A',
      channel: 'alt-a',
    });
    expect(viaA.body).toMatchObject({
      contactCreated: false,
      conversationCreated: true,
      contactId: viaB.body.contactId,
    });
    expect(viaA.body.conversationId).not.toBe(viaB.body.conversationId);
    const [atB] = await sentTo(fixture.stack, '5511955550001', 'alt-b');
    expect(atB).toMatchObject({
      path: '/alt-b/instances/inst-1/token/tok-1/send-text',
      body: { phone: '5511955550001', message: 'por B' },
    });

    const inbound = await sandbox(fixture.stack, '/_sandbox/inbound', {
      channel: 'alt-b',
      account: 'inst-1',
      from: '5511955550001',
      name: 'Edu',
      text: 'Recebi',
    });
    expect(inbound.status).toBe(200);
    await waitFor(() => eventsOf(fixture.receiver, ws.id, 'message.received').length === 1, {
      what: 'alt-b message.received',
    });
    expect(eventsOf(fixture.receiver, ws.id, 'message.received')[0]).toMatchObject({
      conversation_id: viaB.body.conversationId,
      contact: { id: viaB.body.contactId, phone: '+5511955550001' },
      integration: { id: altB.body.id, provider: 'chat' },
    });

    // Z-API's MessageStatusCallback for the send moves its delivery status.
    const read = await sandbox(fixture.stack, '/_sandbox/status', {
      channel: 'alt-b',
      account: 'inst-1',
      message_id: atB!.provider_message_id as string,
      status: 'read',
    });
    expect(read.body).toMatchObject({ delivered_status: 200 });
    await waitFor(
      async () => {
        const conversation = await fixture.stack.admin<Json & { messages: Json[] }>(
          'GET',
          `/admin/v1/workspaces/${ws.id}/conversations/${viaB.body.conversationId}`,
        );
        return conversation.body.messages.some((m) => m.text === 'por B' && m.delivery_status === 'read');
      },
      { what: 'alt-b read status' },
    );
  });

  it('answers 500 for alt-b without complete credentials, and 502 naming the provider when it fails', async () => {
    const ws = await workspace('altb-2');
    const incomplete = await fixture.stack.admin<Json>('POST', `/admin/v1/workspaces/${ws.id}/integrations`, {
      channel: 'alt-b',
      config: { base_url: `${fixture.stack.sandboxUrl}/alt-b`, instance_id: 'inst-2' },
    });
    expect(incomplete.status).toBe(201);
    const noCredentials = await fixture.stack.api<Json>('/api/v1/send-message', ws.key, {
      phone: '+5511955550002',
      message: 'x',
      channel: 'alt-b',
    });
    expect(noCredentials).toEqual({
      status: 500,
      body: { error: 'Integração alt-b sem credenciais completas (instance_id e token)' },
    });

    await fixture.stack.admin('POST', `/admin/v1/workspaces/${ws.id}/integrations`, {
      channel: 'alt-b',
      config: {
        base_url: `${fixture.stack.sandboxUrl}/alt-b`,
        instance_id: 'inst-3',
        token: 't',
        client_token: 'c',
      },
    });
    await sandbox(fixture.stack, '/_sandbox/faults', {
      channel: 'alt-b',
      account: 'inst-3',
      mode: 'error',
      status: 503,
    });
    const failed = await fixture.stack.api<Json>('/api/v1/send-message', ws.key, {
      phone: '+5511955550003',
      message: 'falha',
      channel: 'alt-b',
    });
    expect(failed).toEqual({
      status: 502,
      body: { error: 'Falha ao enviar pelo provedor do canal "alt-b"' },
    });
    await sandbox(fixture.stack, '/_sandbox/faults', { channel: 'alt-b', account: 'inst-3', mode: 'off' });

    // The failed message is stored as failed with its reason; no event claims it was sent.
    const contacts = eventsOf(fixture.receiver, ws.id, 'message.sent');
    expect(contacts).toHaveLength(0);
    const retry = await fixture.stack.api<Json>('/api/v1/send-message', ws.key, {
      phone: '+5511955550003',
      message: 'de novo',
      channel: 'alt-b',
    });
    const conversation = await fixture.stack.admin<Json & { messages: Json[] }>(
      'GET',
      `/admin/v1/workspaces/${ws.id}/conversations/${retry.body.conversationId}`,
    );
    expect(conversation.body.messages.map((m) => [m.text, m.status])).toEqual([
      ['falha', 'failed'],
      ['de novo', 'sent'],
    ]);
    expect(conversation.body.messages[0]!.error).toMatch(/alt-b answered 503/);
  });
});
