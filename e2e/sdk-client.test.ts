import { createAdminClient, createInboxClient } from '@inbox/sdk';
import { verifySignature, verifyStandardWebhook } from '@inbox/sdk/webhooks';
import { waitFor } from '@inbox/testkit';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { evolutionConfig, useStack } from './support/fixtures.js';

const fixture = useStack();

describe('@inbox/sdk against the distributed stack', () => {
  it('sets a workspace up with the admin client, sends with the public one, and verifies the webhook', async () => {
    const baseUrl = fixture.stack.gatewayUrl;
    const admin = createAdminClient({ baseUrl, adminToken: fixture.stack.adminToken });
    const created = await admin.POST('/admin/v1/workspaces', { body: { name: 'SDK' } });
    expect(created.response.status).toBe(201);
    const workspace = { workspace_id: created.data!.workspace_id };

    const integration = await admin.POST('/admin/v1/workspaces/{workspace_id}/integrations', {
      params: { path: workspace },
      body: {
        channel: 'alt-a',
        config: await evolutionConfig(fixture.stack, 'sdk-1', 'k-1'),
      },
    });
    expect(integration.response.status).toBe(201);
    const webhook = await admin.POST('/admin/v1/workspaces/{workspace_id}/webhooks', {
      params: { path: workspace },
      body: { url: `${fixture.receiver.url}/sdk`, events: ['message.sent'] },
    });
    expect(webhook.response.status).toBe(201);
    // A generated secret, in the form the reference Standard Webhooks libraries take as it is.
    const rotated = await admin.POST('/admin/v1/workspaces/{workspace_id}/webhooks/{webhook_id}/secret', {
      params: { path: { ...workspace, webhook_id: webhook.data!.id } },
      body: {},
    });
    const secret = rotated.data!.secret;
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]+={0,2}$/);

    const inbox = createInboxClient({ baseUrl, apiKey: created.data!.api_key });
    const refused = await inbox.POST('/api/v1/send-message', {
      body: { phone: '11 99999-0001', message: '', channel: 'alt-a' },
    });
    expect(refused.response.status).toBe(400);
    expect(refused.error).toEqual({ error: 'Parâmetros obrigatórios: phone, message, channel' });
    const sent = await inbox.POST('/api/v1/send-message', {
      body: { phone: '11 99999-0001', message: 'Olá pelo SDK', channel: 'alt-a' },
    });
    expect(sent.response.status).toBe(200);
    expect(sent.data).toMatchObject({ success: true, contactCreated: true });

    const delivery = await waitFor(
      () => fixture.receiver.received.find((request) => request.rawBody.includes(sent.data!.messageId)),
      { what: 'the message.sent webhook' },
    );
    const headers = delivery.headers as Record<string, string>;
    expect(verifyStandardWebhook(headers, delivery.rawBody, secret)).toMatchObject({ ok: true });
    expect(verifySignature(delivery.rawBody, headers['x-webhook-signature'], secret)).toBe(true);
    expect(() => new Webhook(secret).verify(delivery.rawBody, headers)).not.toThrow();
  });
});
