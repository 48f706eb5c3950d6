import { waitFor } from '@inbox/testkit';
import { describe, expect, it } from 'vitest';
import { callApi, eventsOf, type Json, onlyEvent, sandbox, sentTo, useStack } from './support/fixtures.js';

// The bot channel (Telegram Bot API) through the distributed stack: an integration registers its
// webhook with setWebhook, a Telegram Update becomes message.received with a contact keyed by the
// Telegram user (no phone), and external send answers through sendMessage, or 502 naming the channel.

const fixture = useStack();

const BOT_ID = '6100200300';
const TOKEN = `${BOT_ID}:AAF9kqz_e2eTokenForTheSandboxBot-123456`;
const USER = '424242424';

describe('bot channel (Telegram)', () => {
  it('takes an Update in as message.received, replies by external send, answers 502 when Telegram fails or she blocked the bot, and takes a pin in as where she is', async () => {
    const ws = await fixture.stack.admin<{ workspace_id: string; api_key: string }>(
      'POST',
      '/admin/v1/workspaces',
      {
        name: 'bot-1',
      },
    );
    const workspaceId = ws.body.workspace_id;
    const key = ws.body.api_key;
    await fixture.stack.admin('POST', `/admin/v1/workspaces/${workspaceId}/webhooks`, {
      url: `${fixture.receiver.url}/bot-1`,
      events: ['*'],
    });

    const integration = await fixture.stack.admin<Json>(
      'POST',
      `/admin/v1/workspaces/${workspaceId}/integrations`,
      {
        channel: 'bot',
        config: {
          bot_token: TOKEN,
          secret_token: 'e2e_secret-token',
          base_url: `${fixture.stack.sandboxUrl}/bot`,
        },
      },
    );
    expect(integration.status).toBe(201);
    expect(integration.body).toMatchObject({ channel: 'bot', provider: 'bot', status: 'connected' });
    // The stack's connector serves http on a port of its own: Telegram would refuse both.
    expect(integration.body.warnings).toEqual([
      expect.stringMatching(
        /^O provedor aceitou o webhook de entrada, mas o provedor real do canal "bot" o recusaria: a URL de callback http:\/\/\S+ usa http, e o provedor só aceita https; a URL de callback usa a porta \d+, e o provedor só chama as portas 443, 80, 88, 8443; ajuste PUBLIC_CONNECTOR_URL$/,
      ),
    ]);
    const info = await (await fetch(`${fixture.stack.sandboxUrl}/bot/bot${TOKEN}/getWebhookInfo`)).json();
    expect(info).toMatchObject({
      ok: true,
      result: {
        url: expect.stringContaining(`/inbound/bot/${integration.body.id}`),
        allowed_updates: ['message'],
      },
    });

    const inbound = await sandbox(fixture.stack, '/_sandbox/inbound', {
      channel: 'bot',
      account: BOT_ID,
      from: USER,
      name: 'Joana Prado',
      text: 'Olá, bot!',
      repeat: 2,
    });
    expect(inbound.body).toMatchObject({ ok: true, delivered_statuses: [200, 200] });
    const received = await onlyEvent(fixture.receiver, workspaceId, 'message.received');
    expect(received).toMatchObject({
      contact: { id: expect.any(String), phone: null, name: 'Joana Prado' },
      message: { text: 'Olá, bot!', type: 'text' },
      integration: { id: integration.body.id, provider: 'bot' },
    });
    const conversationId = received!.conversation_id as string;

    const reply = await callApi(fixture.stack, 'POST', '/api/external/messages/send', key, {
      conversation_id: conversationId,
      text: 'Oi, Joana! Como posso ajudar?',
    });
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({ success: true, conversation_id: conversationId });
    const [atTelegram] = await sentTo(fixture.stack, USER, 'bot');
    expect(atTelegram).toMatchObject({
      path: `/bot/bot${TOKEN}/sendMessage`,
      body: { chat_id: Number(USER), text: 'Oi, Joana! Como posso ajudar?' },
    });

    // 4096 characters, 100 of them emoji (4196 UTF-16 code units): within the API's limit and Telegram's.
    const longest = `${'😀'.repeat(100)}${'a'.repeat(3996)}`;
    const long = await callApi(fixture.stack, 'POST', '/api/external/messages/send', key, {
      conversation_id: conversationId,
      text: longest,
    });
    expect(long).toMatchObject({ status: 200, body: { success: true } });
    expect((await sentTo(fixture.stack, USER, 'bot')).at(-1)).toMatchObject({ body: { text: longest } });

    // Telegram failing answers the 502 naming the channel.
    await sandbox(fixture.stack, '/_sandbox/faults', {
      channel: 'bot',
      account: BOT_ID,
      mode: 'error',
      status: 500,
    });
    const failed = await callApi(fixture.stack, 'POST', '/api/external/messages/send', key, {
      conversation_id: conversationId,
      text: 'ainda aí?',
    });
    expect(failed).toEqual({ status: 502, body: { error: 'Falha ao enviar pelo provedor do canal "bot"' } });
    await sandbox(fixture.stack, '/_sandbox/faults', { channel: 'bot', account: BOT_ID, mode: 'off' });

    // She blocked the bot: Telegram answers 403, and the 502 says she takes no messages from it.
    await sandbox(fixture.stack, '/_sandbox/bot/blocks', { account: BOT_ID, user: USER });
    const blocked = await callApi(fixture.stack, 'POST', '/api/external/messages/send', key, {
      conversation_id: conversationId,
      text: 'ainda aí?',
    });
    expect(blocked).toEqual({
      status: 502,
      body: {
        error:
          'O provedor do canal "bot" recusou o envio: o destinatário não pode receber mensagens desta conta (bloqueou-a, removeu a própria conta ou nunca iniciou uma conversa com ela)',
      },
    });

    // The conversation shows the contact without a phone, by the name Telegram gave.
    const read = await fixture.stack.admin<Json>(
      'GET',
      `/admin/v1/workspaces/${workspaceId}/conversations/${conversationId}`,
    );
    expect(read.body).toMatchObject({
      contact: { phone: null, name: 'Joana Prado' },
      integration: { channel: 'bot', provider: 'bot' },
    });

    // Her current location, a bare pin, reaches the receiver as where she is (writing, she unblocked it).
    await sandbox(fixture.stack, '/_sandbox/inbound', {
      channel: 'bot',
      account: BOT_ID,
      from: USER,
      type: 'pin',
      text: '-',
    });
    await waitFor(() => eventsOf(fixture.receiver, workspaceId, 'message.received').length === 2, {
      what: 'the location as a second message',
    });
    expect(eventsOf(fixture.receiver, workspaceId, 'message.received')[1]).toMatchObject({
      conversation_id: conversationId,
      message: { text: '-23.5613, -46.6565', type: 'location' },
    });
  });
});
