import { createHmac, timingSafeEqual } from 'node:crypto';
import { verifySignature, verifyStandardWebhook } from '@inbox/sdk/webhooks';
import { waitFor } from '@inbox/testkit';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { evolutionConfig, useStack } from './support/fixtures.js';
import type { ReceivedRequest } from './support/test-stack.js';

const fixture = useStack();

function verifyRaw(request: ReceivedRequest, secret: string): boolean {
  const header = String(request.headers['x-webhook-signature'] ?? '');
  const expected = `sha256=${createHmac('sha256', secret).update(request.rawBody).digest('hex')}`;
  return header.length === expected.length && timingSafeEqual(Buffer.from(header), Buffer.from(expected));
}

describe('first message end to end, distributed stack', () => {
  it('goes from the public API through every service to the provider and back out as a signed webhook', async () => {
    const workspace = await fixture.stack.admin<{ workspace_id: string; api_key: string; status: string }>(
      'POST',
      '/admin/v1/workspaces',
      { name: 'Acme' },
    );
    expect(workspace.status).toBe(201);
    expect(workspace.body.api_key).toMatch(/^sk_live_[0-9A-Za-z]{40}$/);
    expect(workspace.body.status).toBe('active');
    const ws = workspace.body.workspace_id;

    const integration = await fixture.stack.admin<{ id: string; provider: string; status: string }>(
      'POST',
      `/admin/v1/workspaces/${ws}/integrations`,
      {
        channel: 'alt-a',
        config: await evolutionConfig(fixture.stack, 'acme-1', 'k-123'),
      },
    );
    expect(integration.status).toBe(201);
    expect(integration.body).toMatchObject({ channel: 'alt-a', provider: 'chat', status: 'connected' });

    const secret = 'whsec_test_secret';
    const webhook = await fixture.stack.admin<{ id: string }>('POST', `/admin/v1/workspaces/${ws}/webhooks`, {
      url: `${fixture.receiver.url}/hooks`,
      events: ['message.sent'],
      secret,
    });
    expect(webhook.status).toBe(201);

    const sent = await fixture.stack.api<Record<string, unknown>>(
      '/api/v1/send-message',
      workspace.body.api_key,
      {
        phone: '11 99999-0000',
        message: 'Olá, Maria!',
        channel: 'alt-a',
        contactName: 'Maria',
      },
    );
    expect(sent.status).toBe(200);
    expect(sent.body).toMatchObject({ success: true, contactCreated: true, conversationCreated: true });
    expect(Object.keys(sent.body).sort()).toEqual(
      [
        'contactCreated',
        'contactId',
        'conversationCreated',
        'conversationId',
        'messageId',
        'sent_at',
        'success',
        'waMessageId',
      ].sort(),
    );

    // The provider got the provider's own wire format, with the national number normalised.
    const atProvider = (await (
      await fetch(`${fixture.stack.sandboxUrl}/_sandbox/sent?to=5511999990000&channel=alt-a`)
    ).json()) as Array<Record<string, unknown>>;
    expect(atProvider).toHaveLength(1);
    expect(atProvider[0]).toMatchObject({
      account: 'acme-1',
      path: '/alt-a/message/sendText/acme-1',
      body: { number: '5511999990000', text: 'Olá, Maria!' },
      provider_message_id: sent.body.waMessageId,
    });

    // The webhook: every spec header, legacy twins, and a signature over the raw body.
    const [delivery] = await waitFor(
      () => (fixture.receiver.received.length > 0 ? fixture.receiver.received : undefined),
      {
        what: 'the message.sent webhook',
        timeoutMs: 20_000,
      },
    );
    expect(delivery!.headers['content-type']).toBe('application/json');
    expect(delivery!.headers['user-agent']).toBe('Webhooks/1.0');
    expect(delivery!.headers['x-webhook-event']).toBe('message.sent');
    expect(delivery!.headers['x-legacy-event']).toBe('message.sent');
    const timestamp = Number(delivery!.headers['x-webhook-timestamp']);
    expect(Math.abs(timestamp - Date.now() / 1000)).toBeLessThan(60);
    expect(delivery!.headers['x-legacy-timestamp']).toBe(delivery!.headers['x-webhook-timestamp']);
    expect(verifyRaw(delivery!, secret)).toBe(true);
    expect(verifyRaw(delivery!, 'another secret')).toBe(false);
    // The receiver library agrees, for the spec's signature and the Standard Webhooks headers.
    expect(verifySignature(delivery!.rawBody, String(delivery!.headers['x-webhook-signature']), secret)).toBe(
      true,
    );
    expect(
      verifyStandardWebhook(delivery!.headers as Record<string, string>, delivery!.rawBody, secret),
    ).toMatchObject({ ok: true });
    expect(delivery!.headers['x-legacy-signature']).toBe(delivery!.headers['x-webhook-signature']);
    expect(JSON.parse(delivery!.rawBody)).toEqual({
      event: 'message.sent',
      workspace_id: ws,
      conversation_id: sent.body.conversationId,
      message: { id: sent.body.messageId, text: 'Olá, Maria!', type: 'text' },
      status: { sender_type: 'agent' },
      integration: { id: integration.body.id, provider: 'chat' },
    });

    // The dispatcher recorded the delivery and its attempt.
    const history = await waitFor(
      async () => {
        const found = await fixture.stack.admin<{ deliveries: Array<{ id: string }> }>(
          'GET',
          `/admin/v1/workspaces/${ws}/webhooks/${webhook.body.id}/deliveries?status=delivered`,
        );
        return found.body.deliveries.length > 0 ? found.body.deliveries : undefined;
      },
      { what: 'the recorded delivery' },
    );
    expect(history).toHaveLength(1);
    const recorded = await fixture.stack.admin<Record<string, unknown>>(
      'GET',
      `/admin/v1/workspaces/${ws}/webhooks/${webhook.body.id}/deliveries/${history[0]!.id}`,
    );
    expect(recorded.body).toMatchObject({
      event_type: 'message.sent',
      status: 'delivered',
      attempts: [{ attempt: 1, status_code: 200, response_body: '{"ok":true}' }],
    });

    // A second send reuses the contact and the conversation.
    const again = await fixture.stack.api<Record<string, unknown>>(
      '/api/v1/send-message',
      workspace.body.api_key,
      {
        phone: '+5511999990000',
        message: 'De novo',
        channel: 'alt-a',
      },
    );
    expect(again.body).toMatchObject({
      contactCreated: false,
      conversationCreated: false,
      contactId: sent.body.contactId,
      conversationId: sent.body.conversationId,
    });
  });

  it('keeps no secret in clear: API keys hashed, provider credentials and webhook secrets sealed', async () => {
    const workspace = await fixture.stack.admin<{ workspace_id: string; api_key: string }>(
      'POST',
      '/admin/v1/workspaces',
      {
        name: 'Secrets',
      },
    );
    const ws = workspace.body.workspace_id;
    await fixture.stack.admin('POST', `/admin/v1/workspaces/${ws}/integrations`, {
      channel: 'alt-a',
      config: await evolutionConfig(fixture.stack, 'sec-1', 'provider-credential-xyz'),
    });
    await fixture.stack.admin('POST', `/admin/v1/workspaces/${ws}/webhooks`, {
      url: `${fixture.receiver.url}/secret`,
      events: ['*'],
      secret: 'webhook-secret-xyz',
    });
    const db = new pg.Client({ connectionString: fixture.stack.databaseUrl });
    await db.connect();
    try {
      const dump = async (table: string) =>
        JSON.stringify((await db.query(`select * from ${table}`)).rows, (_key, value) =>
          Buffer.isBuffer(value) ? value.toString('latin1') : value,
        );
      const keys = await dump('gateway.api_keys');
      expect(keys).not.toContain(workspace.body.api_key);
      expect(keys).not.toContain(workspace.body.api_key.slice(12, 40));
      const integrations = await dump('connector.integrations');
      expect(integrations).toContain('v1.');
      expect(integrations).not.toContain('provider-credential-xyz');
      const endpoints = await dump('dispatcher.endpoints');
      expect(endpoints).not.toContain('webhook-secret-xyz');
    } finally {
      await db.end();
    }
  });

  it('refuses a webhook URL that points at a private address outside the allow-list', async () => {
    const workspace = await fixture.stack.admin<{ workspace_id: string }>('POST', '/admin/v1/workspaces', {
      name: 'SSRF',
    });
    for (const url of [
      'http://169.254.169.254/latest/meta-data',
      'http://10.0.0.1/hook',
      'http://[::1]:9/hook',
    ]) {
      const refused = await fixture.stack.admin<{ error: string }>(
        'POST',
        `/admin/v1/workspaces/${workspace.body.workspace_id}/webhooks`,
        {
          url,
          events: ['*'],
        },
      );
      expect(refused.status, url).toBe(400);
      expect(refused.body.error).toMatch(/^url recusada: /);
    }
  });

  it('refuses requests at the door with the spec texts', async () => {
    const noKey = await fixture.stack.api('/api/v1/send-message', undefined, {
      phone: '+5511999990000',
      message: 'x',
      channel: 'alt-a',
    });
    expect(noKey).toEqual({ status: 401, body: { error: 'API Key inválida' } });
    const badKey = await fixture.stack.api(
      '/api/v1/send-message',
      'sk_live_0000000000000000000000000000000000000000',
      {},
    );
    expect(badKey).toEqual({ status: 401, body: { error: 'API Key inválida' } });
    const adminWrong = await fixture.stack.api('/admin/v1/workspaces', 'wrong-token-wrong-token', {
      name: 'x',
    });
    expect(adminWrong.status).toBe(401);
  });

  it('keeps workspaces apart: a key only reaches its own workspace, a suspended one gets 403', async () => {
    const a = await fixture.stack.admin<{ workspace_id: string; api_key: string }>(
      'POST',
      '/admin/v1/workspaces',
      {
        name: 'A',
      },
    );
    const b = await fixture.stack.admin<{ workspace_id: string; api_key: string }>(
      'POST',
      '/admin/v1/workspaces',
      {
        name: 'B',
      },
    );
    await fixture.stack.admin('POST', `/admin/v1/workspaces/${a.body.workspace_id}/integrations`, {
      channel: 'alt-a',
      config: await evolutionConfig(fixture.stack, 'ws-a', 'key-a'),
    });
    const fromB = await fixture.stack.api('/api/v1/send-message', b.body.api_key, {
      phone: '+5511988887777',
      message: 'oi',
      channel: 'alt-a',
    });
    expect(fromB.status).toBe(404);
    expect(fromB.body).toEqual({ error: 'Nenhuma integração conectada do canal "alt-a" neste workspace' });

    await fixture.stack.admin('PATCH', `/admin/v1/workspaces/${a.body.workspace_id}`, {
      status: 'suspended',
    });
    const suspended = await fixture.stack.api('/api/v1/send-message', a.body.api_key, {
      phone: '+5511988887777',
      message: 'oi',
      channel: 'alt-a',
    });
    expect(suspended).toEqual({ status: 403, body: { error: 'Workspace inativo' } });
  });
});
