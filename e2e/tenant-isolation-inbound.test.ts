import { waitFor } from '@inbox/testkit';
import { describe, expect, it } from 'vitest';
import { eventsOf, type Json, sandbox, useStack } from './support/fixtures.js';

const fixture = useStack();

// The connector's own bound on an inbound text (services/provider-connector/src/domain/inbound-bounds.ts).
const textBound = 16_384;

async function workspaceWithAltB(name: string) {
  const ws = await fixture.stack.admin<{ workspace_id: string }>('POST', '/admin/v1/workspaces', { name });
  const id = ws.body.workspace_id;
  const instance = `inst-${name}`;
  const integration = await fixture.stack.admin<{ id: string }>(
    'POST',
    `/admin/v1/workspaces/${id}/integrations`,
    {
      channel: 'alt-b',
      config: { base_url: `${fixture.stack.sandboxUrl}/alt-b`, instance_id: instance, token: `tok-${name}` },
    },
  );
  expect(integration.status).toBe(201);
  await fixture.stack.admin('POST', `/admin/v1/workspaces/${id}/webhooks`, {
    url: `${fixture.receiver.url}/${name}`,
    events: ['*'],
  });
  // Where the connector told Z-API to call, its callback secret in the query.
  const [registered] = (await (
    await fetch(`${fixture.stack.sandboxUrl}/_sandbox/webhooks?channel=alt-b&account=${instance}`)
  ).json()) as Array<{ url: string }>;
  return { id, integrationId: integration.body.id, instance, callbackUrl: registered!.url };
}

/** A callback posted straight to the URL the connector registered, as Z-API posts: no credential of its own. */
function altBCallback(target: { callbackUrl: string }, body: string) {
  return fetch(target.callbackUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
}

function receivedCallback(target: { instance: string }, messageId: string, phone: string, text: string) {
  return JSON.stringify({
    isGroup: false,
    isNewsletter: false,
    instanceId: target.instance,
    type: 'ReceivedCallback',
    fromMe: false,
    messageId,
    phone,
    senderName: 'Remetente',
    text: { message: text },
  });
}

describe("one tenant's inbound never stalls another's", () => {
  it("takes a 1 MiB callback in truncated, and the next workspace's message still arrives", async () => {
    const a = await workspaceWithAltB('iso-a');
    const b = await workspaceWithAltB('iso-b');
    // As large as the connector accepts: as it was, the event it became exceeded NATS's max_payload and
    // blocked the connector's outbox for every workspace behind it.
    const envelope = receivedCallback(a, 'BIG-1', '5511966660001', '');
    const text = 'y'.repeat(1024 * 1024 - Buffer.byteLength(envelope) - 64);
    const big = await altBCallback(a, receivedCallback(a, 'BIG-1', '5511966660001', text));
    expect(big.status).toBe(200);

    const inbound = await sandbox(fixture.stack, '/_sandbox/inbound', {
      channel: 'alt-b',
      account: b.instance,
      from: '5511966660002',
      name: 'Bia',
      text: 'chegou?',
    });
    expect(inbound.status).toBe(200);
    await waitFor(() => eventsOf(fixture.receiver, b.id, 'message.received').length === 1, {
      what: "workspace B's message.received",
      timeoutMs: 15_000,
    });
    expect(eventsOf(fixture.receiver, b.id, 'message.received')[0]).toMatchObject({
      message: { text: 'chegou?' },
    });

    await waitFor(() => eventsOf(fixture.receiver, a.id, 'message.received').length === 1, {
      what: "workspace A's message.received",
    });
    const [received] = eventsOf(fixture.receiver, a.id, 'message.received');
    expect(((received!.message as Json).text as string).length).toBe(textBound);
    const conversation = await fixture.stack.admin<Json & { messages: Json[] }>(
      'GET',
      `/admin/v1/workspaces/${a.id}/conversations/${received!.conversation_id}`,
    );
    expect(conversation.body.messages.map((m) => (m.text as string).length)).toEqual([textBound]);
  });

  it("refuses a disconnected integration's callbacks", async () => {
    const c = await workspaceWithAltB('iso-c');
    const disconnected = await fixture.stack.admin(
      'PATCH',
      `/admin/v1/workspaces/${c.id}/integrations/${c.integrationId}`,
      { status: 'disconnected' },
    );
    expect(disconnected.status).toBe(200);
    const answer = await altBCallback(c, receivedCallback(c, 'OFF-1', '5511966660003', 'ainda aí?'));
    expect(answer.status).toBe(404);
  });

  it("answers 429 to a callback flood on one integration while another's callbacks are taken", async () => {
    const d = await workspaceWithAltB('iso-d');
    const e = await workspaceWithAltB('iso-e');
    // Callbacks alt-b sends that carry no message (presence): each is admitted, read and answered 200.
    const presence = JSON.stringify({ type: 'PresenceChatCallback', phone: '5511966660004' });
    const statuses: number[] = [];
    let retryAfter: string | null = null;
    for (let round = 0; round < 20 && retryAfter === null; round++) {
      const answers = await Promise.all(Array.from({ length: 50 }, () => altBCallback(d, presence)));
      for (const answer of answers) {
        statuses.push(answer.status);
        if (answer.status === 429) retryAfter ??= answer.headers.get('retry-after');
        await answer.body?.cancel();
      }
    }
    expect(statuses).toContain(429);
    expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
    expect(statuses.filter((status) => status !== 200 && status !== 429)).toEqual([]);

    const taken = await altBCallback(e, receivedCallback(e, 'E-1', '5511966660005', 'e eu?'));
    expect(taken.status).toBe(200);
    await waitFor(() => eventsOf(fixture.receiver, e.id, 'message.received').length === 1, {
      what: "workspace E's message.received",
    });
  });
});
