import { waitFor } from '@inbox/testkit';
import { describe, expect, it } from 'vitest';
import {
  eventsOf,
  evolutionConfig,
  type Json,
  officialConfig,
  sandbox,
  sentTo,
  useStack,
} from './support/fixtures.js';

const fixture = useStack();

describe('inbound messages on alt-a', () => {
  it('inbound → message.received with the spec payload → external reply on its conversation_id', async () => {
    const ws = await fixture.stack.admin<{ workspace_id: string; api_key: string }>(
      'POST',
      '/admin/v1/workspaces',
      {
        name: 'in-1',
      },
    );
    const id = ws.body.workspace_id;
    const integration = await fixture.stack.admin<{ id: string }>(
      'POST',
      `/admin/v1/workspaces/${id}/integrations`,
      {
        channel: 'alt-a',
        config: await evolutionConfig(fixture.stack, 'in-1', 'key-in-1'),
      },
    );
    await fixture.stack.admin('POST', `/admin/v1/workspaces/${id}/webhooks`, {
      url: `${fixture.receiver.url}/in-1`,
      events: ['*'],
    });

    const delivered = await sandbox(fixture.stack, '/_sandbox/inbound', {
      channel: 'alt-a',
      account: 'in-1',
      from: '5511933330001',
      name: 'Carla',
      text: 'Oi, tudo bem?',
    });
    expect(delivered.status).toBe(200);
    await waitFor(() => eventsOf(fixture.receiver, id, 'message.received').length === 1, {
      what: 'message.received',
    });
    const [received] = eventsOf(fixture.receiver, id, 'message.received');
    expect(received).toMatchObject({
      event: 'message.received',
      workspace_id: id,
      contact: { phone: '+5511933330001', name: 'Carla' },
      message: { text: 'Oi, tudo bem?', type: 'text' },
      status: { assigned_to_type: null, assigned_to_id: null },
      integration: { id: integration.body.id, provider: 'chat' },
    });
    expect(Object.keys(received!).sort()).toEqual([
      'contact',
      'conversation_id',
      'event',
      'integration',
      'message',
      'status',
      'workspace_id',
    ]);

    // The same provider message delivered again is taken in once.
    const providerMessageId = delivered.body.provider_message_id;
    expect(typeof providerMessageId).toBe('string');

    const reply = await fixture.stack.api<Json>('/api/external/messages/send', ws.body.api_key, {
      conversation_id: received!.conversation_id,
      text: 'Tudo ótimo!',
    });
    expect(reply.status).toBe(200);
    const atProvider = (await (
      await fetch(`${fixture.stack.sandboxUrl}/_sandbox/sent?to=5511933330001`)
    ).json()) as Json[];
    expect(atProvider.map((entry) => (entry.body as Json).text)).toEqual(['Tudo ótimo!']);

    const conversation = await fixture.stack.admin<Json & { messages: Json[] }>(
      'GET',
      `/admin/v1/workspaces/${id}/conversations/${received!.conversation_id}`,
    );
    expect(conversation.body.messages.map((m) => [m.direction, m.text])).toEqual([
      ['inbound', 'Oi, tudo bem?'],
      ['outbound', 'Tudo ótimo!'],
    ]);
    expect(conversation.body.last_inbound_at).not.toBeNull();

    // The contact is the same one send-message reaches by its digits.
    const bySend = await fixture.stack.api<Json>('/api/v1/send-message', ws.body.api_key, {
      phone: '5511933330001',
      message: 'e agora?',
      channel: 'alt-a',
    });
    expect(bySend.body).toMatchObject({
      contactCreated: false,
      conversationCreated: false,
      contactId: (received!.contact as Json).id,
      conversationId: received!.conversation_id,
    });

    // An assigned conversation's next inbound message says to whom.
    const agent = await fixture.stack.admin<{ id: string }>('POST', `/admin/v1/workspaces/${id}/agents`, {
      name: 'Robô',
    });
    const assigned = await fixture.stack.admin<Json>(
      'POST',
      `/admin/v1/workspaces/${id}/conversations/${received!.conversation_id}/assign`,
      { type: 'agent', id: agent.body.id },
    );
    expect(assigned.status).toBe(200);
    await sandbox(fixture.stack, '/_sandbox/inbound', {
      channel: 'alt-a',
      account: 'in-1',
      from: '5511933330001',
      name: 'Carla',
      text: 'Ainda aí?',
    });
    await waitFor(() => eventsOf(fixture.receiver, id, 'message.received').length === 2, {
      what: 'the second message.received',
    });
    expect(eventsOf(fixture.receiver, id, 'message.received')[1]).toMatchObject({
      conversation_id: received!.conversation_id,
      message: { text: 'Ainda aí?' },
      status: { assigned_to_type: 'agent', assigned_to_id: agent.body.id },
    });
  });

  it('takes a provider message in once however often the provider delivers it', async () => {
    const ws = await fixture.stack.admin<{ workspace_id: string }>('POST', '/admin/v1/workspaces', {
      name: 'in-3',
    });
    const id = ws.body.workspace_id;
    await fixture.stack.admin<{ id: string }>('POST', `/admin/v1/workspaces/${id}/integrations`, {
      channel: 'alt-a',
      config: await evolutionConfig(fixture.stack, 'in-3', 'key-in-3'),
    });
    await fixture.stack.admin('POST', `/admin/v1/workspaces/${id}/webhooks`, {
      url: `${fixture.receiver.url}/in-3`,
      events: ['message.received'],
    });
    // Evolution retries a callback up to 10 times; the sandbox posts the very same bytes again.
    const repeated = await sandbox(fixture.stack, '/_sandbox/inbound', {
      channel: 'alt-a',
      account: 'in-3',
      from: '5511933330003',
      text: 'uma vez',
      repeat: 3,
    });
    expect(repeated.body).toMatchObject({ delivered_statuses: [200, 200, 200] });
    // A later inbound marks the end: had the repeats got through, they would have arrived before it.
    await sandbox(fixture.stack, '/_sandbox/inbound', {
      channel: 'alt-a',
      account: 'in-3',
      from: '5511933330003',
      text: 'marcador',
    });
    await waitFor(
      () =>
        eventsOf(fixture.receiver, id, 'message.received').some(
          (e) => (e.message as Json).text === 'marcador',
        ),
      { what: 'marker' },
    );
    expect(eventsOf(fixture.receiver, id, 'message.received').map((e) => (e.message as Json).text)).toEqual([
      'uma vez',
      'marcador',
    ]);
  });

  it("refuses a callback that does not carry the integration's credentials", async () => {
    const ws = await fixture.stack.admin<{ workspace_id: string }>('POST', '/admin/v1/workspaces', {
      name: 'in-2',
    });
    const integration = await fixture.stack.admin<{ id: string }>(
      'POST',
      `/admin/v1/workspaces/${ws.body.workspace_id}/integrations`,
      {
        channel: 'alt-a',
        config: await evolutionConfig(fixture.stack, 'in-2', 'key-in-2'),
      },
    );
    const connectorUrl = `http://127.0.0.1:${fixture.stack.specs.get('provider-connector')!.port}`;
    // Even the instance's own apikey in the body proves nothing: only the header set on the webhook does.
    const forged = await fetch(`${connectorUrl}/inbound/alt-a/${integration.body.id}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        event: 'messages.upsert',
        instance: 'in-2',
        apikey: 'key-in-2',
        data: {
          key: { remoteJid: '5511900000000@s.whatsapp.net', fromMe: false, id: 'X1' },
          message: { conversation: 'hi' },
        },
      }),
    });
    expect(forged.status).toBe(401);
    expect(
      (
        await fetch(`${connectorUrl}/inbound/alt-a/00000000-0000-4000-8000-000000000000`, {
          method: 'POST',
          body: '{}',
        })
      ).status,
    ).toBe(404);
  });
});

describe('numbers as WhatsApp names them', () => {
  /**
   * An alt-a workspace the API writes to as `written`; its customer answers from `from` as the sandbox
   * names them, and the answer must land in the conversation the API began, on its contact.
   */
  async function answerLandsInTheConversation(
    name: string,
    written: string,
    from: string,
    stored: string,
  ): Promise<void> {
    const ws = await fixture.stack.admin<{ workspace_id: string; api_key: string }>(
      'POST',
      '/admin/v1/workspaces',
      { name },
    );
    const id = ws.body.workspace_id;
    await fixture.stack.admin('POST', `/admin/v1/workspaces/${id}/integrations`, {
      channel: 'alt-a',
      config: await evolutionConfig(fixture.stack, name, `key-${name}`),
    });
    await fixture.stack.admin('POST', `/admin/v1/workspaces/${id}/webhooks`, {
      url: `${fixture.receiver.url}/${name}`,
      events: ['*'],
    });
    const sent = await fixture.stack.api<{ conversationId: string; contactId: string }>(
      '/api/v1/send-message',
      ws.body.api_key,
      { phone: written, message: 'Seu pedido saiu', channel: 'alt-a' },
    );
    expect(sent.status).toBe(200);
    const delivered = await sandbox(fixture.stack, '/_sandbox/inbound', {
      channel: 'alt-a',
      account: name,
      from,
      text: 'Obrigado!',
    });
    expect(delivered.status).toBe(200);
    await waitFor(() => eventsOf(fixture.receiver, id, 'message.received').length === 1, {
      what: 'message.received',
    });
    expect(eventsOf(fixture.receiver, id, 'message.received')[0]).toMatchObject({
      conversation_id: sent.body.conversationId,
      contact: { id: sent.body.contactId, phone: stored },
    });
  }

  it("takes a Brazilian mobile's answer, named without its nine, into the API's conversation", async () => {
    // Belo Horizonte (31): WhatsApp names +55 31 98888-7777 as 553188887777.
    await answerLandsInTheConversation('in-nine', '(31) 98888-7777', '5531988887777', '+5531988887777');
  });

  it("takes the answer of a Mexican mobile named with its 1 into the API's conversation", async () => {
    // Evolution answers with the JID WhatsApp verified, 5215512345678; the customer's reply comes from it.
    await answerLandsInTheConversation('in-mx', '+52 55 1234 5678', '525512345678', '+525512345678');
  });

  it("sends to an Argentine mobile written without its 9 in its customer's conversation", async () => {
    const ws = await fixture.stack.admin<{ workspace_id: string; api_key: string }>(
      'POST',
      '/admin/v1/workspaces',
      { name: 'in-ar' },
    );
    const id = ws.body.workspace_id;
    const account = 'pn-in-ar';
    const config = officialConfig(fixture.stack, account);
    const appSecret = config.app_secret;
    const integration = await fixture.stack.admin<Json>('POST', `/admin/v1/workspaces/${id}/integrations`, {
      channel: 'chat-official',
      config,
    });
    expect(integration.status).toBe(201);
    await fixture.stack.admin('POST', `/admin/v1/workspaces/${id}/webhooks`, {
      url: `${fixture.receiver.url}/in-ar`,
      events: ['*'],
    });
    // Meta's wa_id for +54 11 2345-6789 carries the 9 that Argentina's mobiles take after +54.
    await sandbox(fixture.stack, '/_sandbox/inbound', {
      channel: 'chat-official',
      account,
      from: '5491123456789',
      text: 'Hola',
      app_secret: appSecret,
    });
    await waitFor(() => eventsOf(fixture.receiver, id, 'message.received').length === 1, {
      what: 'message.received',
    });
    const [received] = eventsOf(fixture.receiver, id, 'message.received');
    expect(received).toMatchObject({ contact: { phone: '+5491123456789' } });
    const sent = await fixture.stack.api<{ conversationId: string; contactId: string }>(
      '/api/v1/send-message',
      ws.body.api_key,
      { phone: '+54 11 2345-6789', message: '¿En qué te ayudo?', channel: 'chat-official' },
    );
    expect(sent.status).toBe(200);
    expect(sent.body).toMatchObject({
      conversationId: received!.conversation_id,
      contactId: (received!.contact as Json).id,
    });
    const [atProvider] = await sentTo(fixture.stack, '5491123456789', 'chat-official');
    expect(atProvider).toMatchObject({ body: { to: '5491123456789', text: { body: '¿En qué te ayudo?' } } });
  });
  it('keeps a customer who hides their number behind a username on the contact and conversation their number had', async () => {
    const ws = await fixture.stack.admin<{ workspace_id: string; api_key: string }>(
      'POST',
      '/admin/v1/workspaces',
      { name: 'in-bsuid' },
    );
    const id = ws.body.workspace_id;
    const config = officialConfig(fixture.stack, 'pn-in-bsuid');
    const integration = await fixture.stack.admin<Json>('POST', `/admin/v1/workspaces/${id}/integrations`, {
      channel: 'chat-official',
      config,
    });
    expect(integration.status).toBe(201);
    await fixture.stack.admin('POST', `/admin/v1/workspaces/${id}/webhooks`, {
      url: `${fixture.receiver.url}/in-bsuid`,
      events: ['*'],
    });
    const customer = {
      channel: 'chat-official',
      account: 'pn-in-bsuid',
      from: '5511944440061',
      app_secret: config.app_secret,
    };
    await sandbox(fixture.stack, '/_sandbox/inbound', { ...customer, name: 'Bia', text: 'Oi' });
    await waitFor(() => eventsOf(fixture.receiver, id, 'message.received').length === 1, {
      what: 'message.received',
    });
    // Meta omits the number of a user who took a username, and names them by their business-scoped id.
    await sandbox(fixture.stack, '/_sandbox/inbound', {
      ...customer,
      username: 'bia.compras',
      text: 'Sou eu',
    });
    await waitFor(() => eventsOf(fixture.receiver, id, 'message.received').length === 2, {
      what: 'the second message.received',
    });
    const [first, second] = eventsOf(fixture.receiver, id, 'message.received');
    expect(first).toMatchObject({ contact: { phone: '+5511944440061', name: 'Bia' } });
    expect(second).toMatchObject({
      conversation_id: first!.conversation_id,
      contact: first!.contact,
      message: { text: 'Sou eu' },
    });
  });
  it('keeps a customer WhatsApp later names by their LID alone on the contact their number had, on Evolution and Z-API', async () => {
    const ws = await fixture.stack.admin<{ workspace_id: string; api_key: string }>(
      'POST',
      '/admin/v1/workspaces',
      { name: 'in-lid' },
    );
    const id = ws.body.workspace_id;
    await fixture.stack.admin('POST', `/admin/v1/workspaces/${id}/integrations`, {
      channel: 'alt-a',
      config: await evolutionConfig(fixture.stack, 'in-lid-a', 'key-in-lid'),
    });
    await fixture.stack.admin('POST', `/admin/v1/workspaces/${id}/integrations`, {
      channel: 'alt-b',
      config: { base_url: `${fixture.stack.sandboxUrl}/alt-b`, instance_id: 'in-lid-b', token: 'tok-in-lid' },
    });
    await fixture.stack.admin('POST', `/admin/v1/workspaces/${id}/webhooks`, {
      url: `${fixture.receiver.url}/in-lid`,
      events: ['*'],
    });
    // Each channel's customer: first with their number and its LID beside it, then by the LID alone
    // (Evolution: no sender_pn; Z-API: the LID in phone).
    const turns = [
      { channel: 'alt-a', account: 'in-lid-a', from: '5511944440071', addressing_mode: 'pn', text: 'Oi' },
      {
        channel: 'alt-a',
        account: 'in-lid-a',
        from: '5511944440071',
        addressing_mode: 'lid-only',
        text: 'Eu de novo',
      },
      { channel: 'alt-b', account: 'in-lid-b', from: '5511944440072', addressing_mode: 'pn', text: 'Olá' },
      {
        channel: 'alt-b',
        account: 'in-lid-b',
        from: '5511944440072',
        addressing_mode: 'lid',
        text: 'Sou eu',
      },
    ];
    for (const [n, turn] of turns.entries()) {
      expect((await sandbox(fixture.stack, '/_sandbox/inbound', { ...turn, name: 'Bia' })).status).toBe(200);
      await waitFor(() => eventsOf(fixture.receiver, id, 'message.received').length === n + 1, {
        what: `message.received ${n + 1}`,
      });
    }
    const [a1, a2, b1, b2] = eventsOf(fixture.receiver, id, 'message.received');
    expect(a1).toMatchObject({ contact: { phone: '+5511944440071' } });
    expect(a2).toMatchObject({ conversation_id: a1!.conversation_id, contact: a1!.contact });
    expect(b1).toMatchObject({ contact: { phone: '+5511944440072' } });
    expect(b2).toMatchObject({ conversation_id: b1!.conversation_id, contact: b1!.contact });
  });
});
