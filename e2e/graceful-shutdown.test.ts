import { waitFor } from '@inbox/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startReceiver, startTestStack, type TestStack } from './support/test-stack.js';

// A provider and a webhook receiver that take their time, so a request is surely in flight when the
// signal arrives.
const providerDelayMs = 1_500;
let stack: TestStack;
let slowProvider: Awaited<ReturnType<typeof startReceiver>>;
let slowReceiver: Awaited<ReturnType<typeof startReceiver>>;
let apiKey: string;
let workspaceId: string;
let webhookId: string;

beforeAll(async () => {
  slowProvider = await startReceiver(() => ({
    status: 201,
    delayMs: providerDelayMs,
    body: { key: { id: `SLOW${Date.now()}` }, status: 'PENDING' },
  }));
  slowReceiver = await startReceiver(() => ({ status: 200, delayMs: providerDelayMs }));
  stack = await startTestStack();
  const workspace = await stack.admin<{ workspace_id: string; api_key: string }>(
    'POST',
    '/admin/v1/workspaces',
    {
      name: 'Shutdown',
    },
  );
  apiKey = workspace.body.api_key;
  workspaceId = workspace.body.workspace_id;
  await stack.admin('POST', `/admin/v1/workspaces/${workspaceId}/integrations`, {
    channel: 'alt-a',
    config: { base_url: slowProvider.url, instance: 'slow', api_key: 'k' },
  });
  const webhook = await stack.admin<{ id: string }>('POST', `/admin/v1/workspaces/${workspaceId}/webhooks`, {
    url: slowReceiver.url,
    events: ['*'],
  });
  webhookId = webhook.body.id;
});
afterAll(async () => {
  await stack?.stop();
  await slowProvider?.close();
  await slowReceiver?.close();
});

async function terminateMidRequest(service: string) {
  const callsBefore = slowProvider.received.length;
  const response = stack.api<Record<string, unknown>>('/api/v1/send-message', apiKey, {
    phone: '+5511977776666',
    message: `during ${service} shutdown`,
    channel: 'alt-a',
  });
  await waitFor(() => slowProvider.received.length > callsBefore, { what: 'the provider call to start' });
  const child = stack.processes.get(service)!;
  const signalledAt = Date.now();
  child.child.kill('SIGTERM');
  const exitCode = await child.exited;
  const stoppedAfterMs = Date.now() - signalledAt;
  return { response: await response, exitCode, stoppedAfterMs, output: child.output() };
}

describe('graceful shutdown on SIGTERM', () => {
  it.each(['gateway', 'messaging', 'provider-connector'])(
    '%s finishes the request in flight and exits 0 within 10 s',
    async (service) => {
      const { response, exitCode, stoppedAfterMs, output } = await terminateMidRequest(service);
      expect(response.status, JSON.stringify(response.body)).toBe(200);
      expect(response.body).toMatchObject({ success: true });
      expect(exitCode, output).toBe(0);
      expect(stoppedAfterMs).toBeLessThan(10_000);
      await stack.restart(service);
    },
  );

  it('webhook-dispatcher finishes the delivery in flight, exits 0, and does not send it again after restart', async () => {
    const before = slowReceiver.received.length;
    const sent = await stack.api<{ messageId: string }>('/api/v1/send-message', apiKey, {
      phone: '+5511955554444',
      message: 'webhook in flight',
      channel: 'alt-a',
    });
    expect(sent.status).toBe(200);
    await waitFor(() => slowReceiver.received.length > before, { what: 'the webhook POST to start' });
    const child = stack.processes.get('webhook-dispatcher')!;
    const signalledAt = Date.now();
    child.child.kill('SIGTERM');
    expect(await child.exited, child.output()).toBe(0);
    expect(Date.now() - signalledAt).toBeLessThan(10_000);
    await stack.restart('webhook-dispatcher');

    const deliveries = await waitFor(
      async () => {
        const found = await stack.admin<{
          deliveries: Array<{ status: string; attempts: unknown[]; event_type: string }>;
        }>('GET', `/admin/v1/workspaces/${workspaceId}/webhooks/${webhookId}/deliveries`);
        const latest = found.body.deliveries.find(
          (d) => d.event_type === 'message.sent' && d.status === 'delivered',
        );
        return latest ? found.body.deliveries : undefined;
      },
      { what: 'the delivery recorded as delivered' },
    );
    const forThisMessage = slowReceiver.received.filter((r) => r.rawBody.includes(sent.body.messageId));
    expect(forThisMessage).toHaveLength(1);
    expect(deliveries.length).toBeGreaterThan(0);
  });

  it('pipeline exits 0 promptly when idle', async () => {
    const child = stack.processes.get('pipeline')!;
    child.child.kill('SIGTERM');
    expect(await child.exited, child.output()).toBe(0);
    await stack.restart('pipeline');
  });
});
