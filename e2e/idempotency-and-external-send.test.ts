import { randomUUID } from 'node:crypto';
import { waitFor } from '@inbox/testkit';
import { describe, expect, it } from 'vitest';
import { evolutionConfig, forgetIdempotencyKeys, type Json, sentTo, useStack } from './support/fixtures.js';

const fixture = useStack();

async function workspaceWithAltA(instance: string) {
  const ws = await fixture.stack.admin<{ workspace_id: string; api_key: string }>(
    'POST',
    '/admin/v1/workspaces',
    {
      name: instance,
    },
  );
  await fixture.stack.admin('POST', `/admin/v1/workspaces/${ws.body.workspace_id}/integrations`, {
    channel: 'alt-a',
    config: await evolutionConfig(fixture.stack, instance, `key-${instance}`),
  });
  return { id: ws.body.workspace_id, key: ws.body.api_key };
}

async function post(path: string, key: string, body: unknown, idempotencyKey?: string) {
  const response = await fetch(`${fixture.stack.gatewayUrl}${path}`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${key}`,
      'content-type': 'application/json',
      ...(idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}),
    },
    body: JSON.stringify(body),
  });
  return { status: response.status, headers: response.headers, body: (await response.json()) as Json };
}

describe('Idempotency-Key', () => {
  it('replays the first answer for the same key and body, sending once', async () => {
    const ws = await workspaceWithAltA('idem-1');
    const body = { phone: '+5511911110001', message: 'uma vez só', channel: 'alt-a' };
    const first = await post('/api/v1/send-message', ws.key, body, 'order-42');
    expect(first.status).toBe(200);
    const again = await post(
      '/api/v1/send-message',
      ws.key,
      { channel: 'alt-a', message: 'uma vez só', phone: '+5511911110001' },
      'order-42',
    );
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await sentTo(fixture.stack, '5511911110001')).toHaveLength(1);

    const different = await post('/api/v1/send-message', ws.key, { ...body, message: 'outra' }, 'order-42');
    expect(different).toMatchObject({
      status: 422,
      body: { error: 'Idempotency-Key já usada com outra requisição' },
    });
    expect(await sentTo(fixture.stack, '5511911110001')).toHaveLength(1);

    const withoutKey = await post('/api/v1/send-message', ws.key, body);
    expect(withoutKey.body.messageId).not.toBe(first.body.messageId);
    expect(await sentTo(fixture.stack, '5511911110001')).toHaveLength(2);
  });

  it('sends once when concurrent requests carry one key', async () => {
    const ws = await workspaceWithAltA('idem-2');
    const body = { phone: '+5511911110002', message: 'corrida', channel: 'alt-a' };
    const answers = await Promise.all(
      Array.from({ length: 8 }, () => post('/api/v1/send-message', ws.key, body, 'race-1')),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(8).fill(200));
    expect(new Set(answers.map((a) => a.body.messageId)).size).toBe(1);
    expect(await sentTo(fixture.stack, '5511911110002')).toHaveLength(1);
  });

  it('scopes keys per workspace and refuses malformed keys', async () => {
    const a = await workspaceWithAltA('idem-3a');
    const b = await workspaceWithAltA('idem-3b');
    const body = { phone: '+5511911110003', message: 'escopo', channel: 'alt-a' };
    const fromA = await post('/api/v1/send-message', a.key, body, 'shared-key');
    const fromB = await post('/api/v1/send-message', b.key, body, 'shared-key');
    expect(fromA.status).toBe(200);
    expect(fromB.status).toBe(200);
    expect(fromB.body.messageId).not.toBe(fromA.body.messageId);
    expect(await sentTo(fixture.stack, '5511911110003')).toHaveLength(2);
    const bad = await post('/api/v1/send-message', a.key, body, 'x'.repeat(256));
    expect(bad).toMatchObject({
      status: 400,
      body: { error: 'Idempotency-Key deve ter de 1 a 255 caracteres visíveis' },
    });
  });
});

describe('external send', () => {
  it('sends once when the gateway lost its record of the key mid-request: the retry finds the first message', async () => {
    const ws = await workspaceWithAltA('idem-lost');
    const body = { phone: '+5511911110009', message: 'só uma vez, mesmo assim', channel: 'alt-a' };
    const first = await post('/api/v1/send-message', ws.key, body, 'order-lost');
    expect(first.status).toBe(200);
    // As a gateway that died before recording the answer leaves it: the key's record gone, taken over.
    await forgetIdempotencyKeys(fixture.stack, ws.id);
    const retry = await post('/api/v1/send-message', ws.key, body, 'order-lost');
    expect(retry.status).toBe(200);
    // Messaging found the message the key created: same ids, same answer, and the provider called once.
    expect(retry.body).toEqual(first.body);
    expect(await sentTo(fixture.stack, '5511911110009')).toHaveLength(1);

    // The same for external send into that conversation.
    const reply = { conversation_id: first.body.conversationId, text: 'e a resposta, uma vez' };
    const external = await post('/api/external/messages/send', ws.key, reply, 'reply-lost');
    expect(external.status).toBe(200);
    await forgetIdempotencyKeys(fixture.stack, ws.id);
    const externalRetry = await post('/api/external/messages/send', ws.key, reply, 'reply-lost');
    expect(externalRetry.body).toEqual(external.body);
    expect(await sentTo(fixture.stack, '5511911110009')).toHaveLength(2);
  });

  it('sends into an existing conversation, once per Idempotency-Key, and announces it', async () => {
    const ws = await workspaceWithAltA('ext-1');
    const webhook = await fixture.stack.admin<{ id: string }>(
      'POST',
      `/admin/v1/workspaces/${ws.id}/webhooks`,
      {
        url: `${fixture.receiver.url}/ext`,
        events: ['message.sent'],
      },
    );
    expect(webhook.status).toBe(201);
    const opened = await post('/api/v1/send-message', ws.key, {
      phone: '+5511911110004',
      message: 'abre',
      channel: 'alt-a',
    });
    const conversationId = opened.body.conversationId as string;

    const body = {
      conversation_id: conversationId,
      text: 'resposta do sistema',
      sender_type: 'system',
      sender_name: 'Robô',
    };
    const sent = await post('/api/external/messages/send', ws.key, body, 'ext-key-1');
    expect(sent.status).toBe(200);
    expect(sent.body).toMatchObject({ success: true, conversation_id: conversationId, workspace_id: ws.id });
    expect(Object.keys(sent.body).sort()).toEqual([
      'conversation_id',
      'message_id',
      'sent_at',
      'success',
      'workspace_id',
    ]);
    const replay = await post('/api/external/messages/send', ws.key, body, 'ext-key-1');
    expect(replay.body).toEqual(sent.body);
    const atProvider = await sentTo(fixture.stack, '5511911110004');
    expect(atProvider.map((entry) => (entry.body as Json).text)).toEqual(['abre', 'resposta do sistema']);

    const hook = await waitFor(
      () => fixture.receiver.received.find((r) => r.rawBody.includes(sent.body.message_id as string)),
      { what: 'the external send webhook' },
    );
    expect(JSON.parse(hook.rawBody)).toMatchObject({
      event: 'message.sent',
      conversation_id: conversationId,
      message: { id: sent.body.message_id, text: 'resposta do sistema', type: 'text' },
      status: { sender_type: 'system' },
    });

    // Without sender_type the reply is the agent's.
    const byAgent = await post('/api/external/messages/send', ws.key, {
      conversation_id: conversationId,
      text: 'resposta do agente',
    });
    expect(byAgent.status).toBe(200);
    const agentHook = await waitFor(
      () => fixture.receiver.received.find((r) => r.rawBody.includes(byAgent.body.message_id as string)),
      { what: 'the default sender_type webhook' },
    );
    expect(JSON.parse(agentHook.rawBody)).toMatchObject({
      event: 'message.sent',
      message: { id: byAgent.body.message_id, text: 'resposta do agente' },
      status: { sender_type: 'agent' },
    });
  });

  it('answers 404 for a conversation that is missing or of another workspace', async () => {
    const a = await workspaceWithAltA('ext-2a');
    const b = await workspaceWithAltA('ext-2b');
    const opened = await post('/api/v1/send-message', a.key, {
      phone: '+5511911110005',
      message: 'oi',
      channel: 'alt-a',
    });
    for (const conversationId of [randomUUID(), opened.body.conversationId]) {
      const answer = await post('/api/external/messages/send', b.key, {
        conversation_id: conversationId,
        text: 'x',
      });
      expect(answer).toMatchObject({
        status: 404,
        body: { error: 'Conversa não encontrada ou não pertence a este workspace' },
      });
    }
    expect(await sentTo(fixture.stack, '5511911110005')).toHaveLength(1);
  });

  it('answers 502 naming the channel when the provider fails, and records no message.sent', async () => {
    const ws = await workspaceWithAltA('ext-3');
    const opened = await post('/api/v1/send-message', ws.key, {
      phone: '+5511911110006',
      message: 'oi',
      channel: 'alt-a',
    });
    await fetch(`${fixture.stack.sandboxUrl}/_sandbox/faults`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ channel: 'alt-a', account: 'ext-3', mode: 'error', status: 500 }),
    });
    const failed = await post('/api/external/messages/send', ws.key, {
      conversation_id: opened.body.conversationId,
      text: 'falha',
    });
    expect(failed).toMatchObject({
      status: 502,
      body: { error: 'Falha ao enviar pelo provedor do canal "alt-a"' },
    });
    const viaSendMessage = await post('/api/v1/send-message', ws.key, {
      phone: '+5511911110006',
      message: 'falha 2',
      channel: 'alt-a',
    });
    expect(viaSendMessage.status).toBe(502);
    await fetch(`${fixture.stack.sandboxUrl}/_sandbox/faults`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ channel: 'alt-a', account: 'ext-3', mode: 'off' }),
    });
  });
});

describe('a number with no WhatsApp', () => {
  it("answers send-message 502 saying so when Evolution's check finds no account, and keeps the message failed", async () => {
    const ws = await workspaceWithAltA('ext-4');
    await fetch(`${fixture.stack.sandboxUrl}/_sandbox/without-whatsapp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ number: '5511911110007' }),
    });
    const refused = await post('/api/v1/send-message', ws.key, {
      phone: '+5511911110007',
      message: 'oi',
      channel: 'alt-a',
    });
    expect(refused).toMatchObject({
      status: 502,
      body: { error: 'O provedor do canal "alt-a" recusou o envio: o número não está no WhatsApp' },
    });
    expect(await sentTo(fixture.stack, '5511911110007')).toHaveLength(0);
    // Stored as failed with Evolution's reason; the integration is fine and stays connected.
    const listed = await fixture.stack.admin<{ conversations: Json[] }>(
      'GET',
      `/admin/v1/workspaces/${ws.id}/conversations`,
    );
    const read = await fixture.stack.admin<Json & { messages: Json[] }>(
      'GET',
      `/admin/v1/workspaces/${ws.id}/conversations/${listed.body.conversations[0]!.id}`,
    );
    expect(read.body.messages).toMatchObject([
      {
        text: 'oi',
        status: 'failed',
        error: 'alt-a answered 400 to sendText: 5511911110007 is not on WhatsApp',
      },
    ]);
    const integrations = await fixture.stack.admin<{ integrations: Json[] }>(
      'GET',
      `/admin/v1/workspaces/${ws.id}/integrations`,
    );
    expect(integrations.body.integrations).toMatchObject([{ status: 'connected', status_reason: null }]);
  });
});
