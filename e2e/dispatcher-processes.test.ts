import { randomBytes, randomUUID } from 'node:crypto';
import { type Bus, connectBus } from '@inbox/bus';
import type { WireEvent } from '@inbox/contracts';
import { type ServiceProcessSpec, serviceProcessSpecs, startServiceProcess } from '@inbox/runtime';
import { createDatabase, freePort, type ManagedProcess, uniquePrefix, waitFor } from '@inbox/testkit';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { e2eBusUrl, startReceiver } from './support/test-stack.js';

// Webhook dispatchers as separate processes on one NATS stream and one Postgres, fed events directly.
let bus: Bus;
let makeSpec: () => Promise<ServiceProcessSpec>;
const running: ManagedProcess[] = [];
const receivers: Array<Awaited<ReturnType<typeof startReceiver>>> = [];

beforeAll(async () => {
  const { postgresAdminUrl } = inject('infra');
  const busUrl = e2eBusUrl();
  const databaseUrl = await createDatabase(postgresAdminUrl, 'dispatch');
  const busPrefix = uniquePrefix();
  const encryptionKey = randomBytes(32).toString('base64');
  makeSpec = async () => {
    const port = await freePort();
    const spec = serviceProcessSpecs({
      busUrl,
      databaseUrl,
      busPrefix,
      adminToken: 'unused-admin-token',
      encryptionKey,
      logLevel: 'warn',
      outboundAllowedCidrs: '127.0.0.0/8',
      webhookTimeoutMs: 1_000,
      webhookRetrySchedule: '1,1,1',
      ports: { gateway: 0, connector: 0, messaging: 0, pipeline: 0, dispatcher: port, sandbox: 0 },
    }).find((s) => s.name === 'webhook-dispatcher')!;
    return spec;
  };
  bus = await connectBus({ url: busUrl, prefix: busPrefix });
});
afterAll(async () => {
  await Promise.all(running.map((p) => p.stop('SIGKILL')));
  await bus?.drain();
  await Promise.all(receivers.map((r) => r.close()));
});

async function start(): Promise<ManagedProcess> {
  const process = await startServiceProcess(await makeSpec());
  running.push(process);
  return process;
}

function events(workspaceId: string, count: number): WireEvent[] {
  return Array.from({ length: count }, (_, i) => ({
    id: randomUUID(),
    type: 'message.sent',
    workspace_id: workspaceId,
    occurred_at: new Date().toISOString(),
    // A real message.sent payload: what receivers get is checked against the OpenAPI document.
    data: {
      event: 'message.sent',
      workspace_id: workspaceId,
      conversation_id: randomUUID(),
      message: { id: randomUUID(), text: `message ${i}`, type: 'text' },
      status: { sender_type: 'agent' },
      integration: { id: randomUUID(), provider: 'chat' },
    },
  }));
}

describe('webhook dispatcher processes', () => {
  it('delivers every event at least once when a dispatcher is killed with SIGKILL mid-stream and restarted', async () => {
    const first = await start();
    const receiver = await startReceiver(() => ({ status: 200, delayMs: 20 }));
    receivers.push(receiver);
    const workspace = randomUUID();
    await bus.request('cmd.dispatcher.create-webhook', {
      workspace_id: workspace,
      url: `${receiver.url}/k`,
      events: ['*'],
    });
    const batch = events(workspace, 300);
    for (const event of batch) await bus.publish(event);
    await waitFor(() => receiver.received.length >= 50, { what: 'deliveries under way' });
    first.child.kill('SIGKILL');
    expect(await first.exited).toBeNull();
    const deliveredBeforeCrash = new Set(receiver.received.map((r) => r.headers['x-webhook-id'])).size;
    expect(deliveredBeforeCrash).toBeLessThan(300);

    await start();
    await waitFor(
      () => batch.every((event) => receiver.received.some((r) => r.headers['x-webhook-id'] === event.id)),
      { what: 'every event delivered after the restart', timeoutMs: 60_000, intervalMs: 200 },
    );
  });

  it('shares the stream between two processes without posting any event twice in a clean run', async () => {
    await start();
    const receiver = await startReceiver(() => ({ status: 200 }));
    receivers.push(receiver);
    const workspace = randomUUID();
    await bus.request('cmd.dispatcher.create-webhook', {
      workspace_id: workspace,
      url: `${receiver.url}/two`,
      events: ['*'],
    });
    const batch = events(workspace, 400);
    for (const event of batch) await bus.publish(event);
    await waitFor(() => new Set(receiver.received.map((r) => r.headers['x-webhook-id'])).size === 400, {
      what: 'all 400 events',
      timeoutMs: 60_000,
    });
    // Let a duplicate, were there one, arrive: one more event through the same path marks the end.
    const [marker] = events(workspace, 1);
    await bus.publish(marker!);
    await waitFor(() => receiver.received.some((r) => r.headers['x-webhook-id'] === marker!.id), {
      what: 'the marker',
    });
    expect(receiver.received).toHaveLength(401);
  });
});
