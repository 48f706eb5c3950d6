import { verifySignature } from '@inbox/sdk/webhooks';
import { waitFor } from '@inbox/testkit';
import { describe, expect, it } from 'vitest';
import { evolutionConfig, type Json, useStack } from './fixtures.js';
import type { ReceivedRequest, TestStack } from './test-stack.js';

/**
 * What must hold on every broker, run once per broker against the distributed stack: a first message
 * end to end with a signed webhook, ordered delivery, and nothing lost when the dispatcher or messaging
 * is killed with SIGKILL under load.
 */
export function brokerCore(broker: string, busUrl: () => string): void {
  // Messages of the ordered test whose first attempt the receiver refuses, to force a hold.
  const refuseOnce = new Set<string>();
  const refused = new Set<ReceivedRequest>();
  const fixture = useStack(
    // A short attempt timeout keeps the lease short, so a killed dispatcher's deliveries are taken over soon.
    () => ({
      busUrl: busUrl(),
      webhookRetrySchedule: '1,1,1,1,1',
      webhookTimeoutMs: 3_000,
      rateLimitPerMinute: 100_000,
    }),
    (request) => {
      if (refuseOnce.delete(textOf(request))) {
        refused.add(request);
        return { status: 500 };
      }
      return { status: 200 };
    },
  );

  const deliveredTo = (path: string) =>
    fixture.receiver.received.filter((r) => r.headers['x-webhook-id'] !== undefined && r.path === path);

  describe(`the platform on ${broker}`, () => {
    it('sends a first message end to end and delivers its signed webhook', async () => {
      const { key } = await workspaceWith(fixture.stack, `${fixture.receiver.url}/first`, {
        secret: 'whsec_core_secret',
      });
      const sent = await send(fixture.stack, key, '11 98888-0001', 'primeira');
      expect(sent.status).toBe(200);
      const delivery = await waitFor(
        () => fixture.receiver.received.find((r) => r.rawBody.includes(String(sent.body.messageId))),
        { what: 'the message.sent webhook' },
      );
      expect(
        verifySignature(
          delivery.rawBody,
          String(delivery.headers['x-webhook-signature']),
          'whsec_core_secret',
        ),
      ).toBe(true);
      expect(JSON.parse(delivery.rawBody)).toMatchObject({
        event: 'message.sent',
        message: { text: 'primeira' },
      });
    });

    it('delivers a conversation in order to an ordered endpoint, holding later messages behind a refused one', async () => {
      const { key } = await workspaceWith(fixture.stack, `${fixture.receiver.url}/ordered`, {
        ordered: true,
      });
      const texts = Array.from({ length: 8 }, (_, i) => `ordered ${i + 1}`);
      refuseOnce.add(texts[0]!);
      // One after the other: each commit, and so each sequence number, follows the previous one.
      for (const text of texts)
        expect((await send(fixture.stack, key, '11 98888-0002', text)).status).toBe(200);
      await waitFor(() => new Set(deliveredTo('/ordered').map(textOf)).size === texts.length, {
        what: 'every ordered delivery',
        timeoutMs: 30_000,
      });
      const accepted = deliveredTo('/ordered').filter((r) => !refused.has(r));
      expect(accepted.map(textOf)).toEqual(texts);
    }, 90_000);

    for (const service of ['webhook-dispatcher', 'messaging'] as const) {
      it(`loses no message.sent when ${service} is killed with SIGKILL under load`, async () => {
        const { key } = await workspaceWith(fixture.stack, `${fixture.receiver.url}/${service}`);
        const answered: string[] = [];
        let stop = false;
        const load = Promise.all(
          Array.from({ length: 4 }, async (_, worker) => {
            for (let i = 0; !stop; i++) {
              const sent = await send(
                fixture.stack,
                key,
                `11 9770${worker}-${String(i).padStart(4, '0')}`,
                `load ${worker}.${i}`,
              ).catch(() => undefined);
              if (sent?.status === 200) answered.push(String(sent.body.messageId));
            }
          }),
        );
        await waitFor(() => answered.length >= 20, { what: 'load under way', timeoutMs: 30_000 });
        const victim = fixture.stack.processes.get(service)!;
        victim.child.kill('SIGKILL');
        await victim.exited;
        await fixture.stack.restart(service);
        const after = answered.length;
        await waitFor(() => answered.length >= after + 20, {
          what: 'load answered after the restart',
          timeoutMs: 60_000,
        });
        stop = true;
        await load;
        await waitFor(
          () => {
            const delivered = new Set(
              deliveredTo(`/${service}`).map(
                (r) => (JSON.parse(r.rawBody) as { message: { id: string } }).message.id,
              ),
            );
            return answered.every((id) => delivered.has(id));
          },
          { what: 'a webhook for every answered send', timeoutMs: 90_000, intervalMs: 250 },
        );
      }, 240_000);
    }
  });
}

function textOf(request: ReceivedRequest): string {
  try {
    return (JSON.parse(request.rawBody) as { message?: { text?: string } }).message?.text ?? '';
  } catch {
    return '';
  }
}

async function workspaceWith(
  stack: TestStack,
  url: string,
  webhook: { secret?: string; ordered?: boolean } = {},
): Promise<{ key: string }> {
  const created = await stack.admin<{ workspace_id: string; api_key: string }>(
    'POST',
    '/admin/v1/workspaces',
    {
      name: 'core',
    },
  );
  const ws = created.body.workspace_id;
  const integration = await stack.admin('POST', `/admin/v1/workspaces/${ws}/integrations`, {
    channel: 'alt-a',
    config: await evolutionConfig(stack, `core-${ws.slice(0, 8)}`, 'k-core'),
  });
  expect(integration.status).toBe(201);
  const hook = await stack.admin('POST', `/admin/v1/workspaces/${ws}/webhooks`, {
    url,
    events: ['message.sent'],
    ...webhook,
  });
  expect(hook.status).toBe(201);
  return { key: created.body.api_key };
}

function send(stack: TestStack, key: string, phone: string, message: string) {
  return stack.api<Json>('/api/v1/send-message', key, { phone, message, channel: 'alt-a' });
}
