import { describe, expect, it } from 'vitest';
import { callApi, type Json, onlyEvent, sandbox, sentTo, useStack } from './support/fixtures.js';

// The market channel (Mercado Livre) through the distributed stack: the integration answers which
// notification URL to set in ML's developer console, a buyer's question notified there becomes
// message.received with a contact keyed by the buyer's ML user id, a reply from the panel answers the
// question through /answers, and external send (the public API) refuses the channel clearly.

const fixture = useStack();

const APP = { client_id: '7301882211930045', client_secret: 'e2e-market-app-secret' };
const SELLER = '530611223';
const BUYER = '774411229';

describe('market channel (Mercado Livre)', () => {
  it('takes a question in as message.received, answers it from the panel, and refuses external send', async () => {
    const ws = await fixture.stack.admin<{ workspace_id: string; api_key: string }>(
      'POST',
      '/admin/v1/workspaces',
      { name: 'market-1' },
    );
    const workspaceId = ws.body.workspace_id;
    await fixture.stack.admin('POST', `/admin/v1/workspaces/${workspaceId}/webhooks`, {
      url: `${fixture.receiver.url}/market-1`,
      events: ['*'],
    });

    // The seller's consent to the application gives the token pair.
    await sandbox(fixture.stack, '/_sandbox/market/applications', APP);
    const granted = await sandbox(fixture.stack, '/_sandbox/market/authorizations', {
      client_id: APP.client_id,
      seller_id: SELLER,
    });
    const integration = await fixture.stack.admin<Json & { warnings: string[] }>(
      'POST',
      `/admin/v1/workspaces/${workspaceId}/integrations`,
      {
        channel: 'market',
        config: {
          seller_id: SELLER,
          access_token: granted.body.access_token,
          refresh_token: granted.body.refresh_token,
          ...APP,
          base_url: `${fixture.stack.sandboxUrl}/market`,
        },
      },
    );
    expect(integration.status).toBe(201);
    expect(integration.body).toMatchObject({ channel: 'market', provider: 'market', status: 'connected' });
    // ML has no API for the notification URL: the answer says what to set in its console.
    const manual = integration.body.warnings.find((warning) => warning.includes('questions, messages'));
    const notificationUrl = /configure (\S+) como/.exec(manual ?? '')?.[1];
    expect(notificationUrl).toContain(`/inbound/market/${integration.body.id}`);
    await sandbox(fixture.stack, '/_sandbox/market/applications', {
      ...APP,
      notification_url: notificationUrl,
    });

    const asked = await sandbox(fixture.stack, '/_sandbox/inbound', {
      channel: 'market',
      account: SELLER,
      from: BUYER,
      name: 'COMPRADORA_JOANA',
      text: 'Serve no modelo 2020?',
      repeat: 2,
    });
    expect(asked.body).toMatchObject({ ok: true, delivered_statuses: [200, 200] });
    const received = await onlyEvent(fixture.receiver, workspaceId, 'message.received');
    expect(received).toMatchObject({
      contact: { id: expect.any(String), phone: null, name: 'COMPRADORA_JOANA' },
      message: { text: 'Serve no modelo 2020?', type: 'text' },
      integration: { id: integration.body.id, provider: 'market' },
    });
    const conversationId = received!.conversation_id as string;

    // The spec's external send does not reach the channel.
    const external = await callApi(fixture.stack, 'POST', '/api/external/messages/send', ws.body.api_key, {
      conversation_id: conversationId,
      text: 'pela API',
    });
    expect(external).toEqual({
      status: 400,
      body: {
        error:
          'O envio externo não é suportado em conversas do canal "market": ele só é suportado nos canais "chat-official", "alt-a", "alt-b", "bot" ou "livechat"',
      },
    });

    const reply = await fixture.stack.admin<Json>(
      'POST',
      `/admin/v1/workspaces/${workspaceId}/conversations/${conversationId}/messages`,
      { text: 'Serve sim!', sender_name: 'Ana' },
    );
    expect(reply.status).toBe(201);
    const [atMl] = await sentTo(fixture.stack, BUYER, 'market');
    expect(atMl).toMatchObject({
      path: '/market/answers',
      body: { question_id: Number(asked.body.provider_message_id), text: 'Serve sim!' },
    });
  });
});
