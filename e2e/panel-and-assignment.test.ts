import { randomUUID } from 'node:crypto';
import { waitFor } from '@inbox/testkit';
import { describe, expect, it } from 'vitest';
import { eventsOf, type Json, useStack } from './support/fixtures.js';

const fixture = useStack();

async function workspace(instance: string) {
  const ws = await fixture.stack.admin<{ workspace_id: string; api_key: string }>(
    'POST',
    '/admin/v1/workspaces',
    {
      name: instance,
    },
  );
  const id = ws.body.workspace_id;
  const integration = await fixture.stack.admin<{ id: string }>(
    'POST',
    `/admin/v1/workspaces/${id}/integrations`,
    {
      channel: 'alt-a',
      config: { base_url: `${fixture.stack.sandboxUrl}/alt-a`, instance, api_key: `key-${instance}` },
    },
  );
  await fixture.stack.admin('POST', `/admin/v1/workspaces/${id}/webhooks`, {
    url: `${fixture.receiver.url}/${instance}`,
    events: ['*'],
    // The tests read the events in the order they were emitted: only an ordered endpoint promises it.
    ordered: true,
  });
  return { id, key: ws.body.api_key, integrationId: integration.body.id };
}

const send = (key: string, body: Json) => fixture.stack.api<Json>('/api/v1/send-message', key, body);

describe('assignment, resolution and the panel reads', () => {
  it('assigns by agentId before the message is sent, and the panel assigns, unassigns and resolves', async () => {
    const ws = await workspace('panel-1');
    const agent = await fixture.stack.admin<{ id: string }>('POST', `/admin/v1/workspaces/${ws.id}/agents`, {
      name: 'Bia',
    });
    const member = await fixture.stack.admin<{ id: string }>(
      'POST',
      `/admin/v1/workspaces/${ws.id}/members`,
      {
        name: 'Ana',
        email: 'ana@example.com',
      },
    );
    expect(agent.status).toBe(201);
    expect(member.status).toBe(201);

    const sent = await send(ws.key, {
      phone: '+5511922220001',
      message: 'com agente',
      channel: 'alt-a',
      agentId: agent.body.id,
    });
    expect(sent.status).toBe(200);
    const conversationId = sent.body.conversationId as string;
    await waitFor(() => eventsOf(fixture.receiver, ws.id).length >= 2, { what: 'assigned and sent' });
    expect(eventsOf(fixture.receiver, ws.id).map((e) => e.event)).toEqual([
      'conversation.assigned',
      'message.sent',
    ]);
    expect(eventsOf(fixture.receiver, ws.id)[0]).toEqual({
      event: 'conversation.assigned',
      workspace_id: ws.id,
      conversation_id: conversationId,
      status: { assigned_to_type: 'agent', assigned_to_id: agent.body.id },
    });

    const base = `/admin/v1/workspaces/${ws.id}/conversations/${conversationId}`;
    const toMember = await fixture.stack.admin<Json>('POST', `${base}/assign`, {
      type: 'human',
      id: member.body.id,
    });
    expect(toMember.body).toMatchObject({
      status: 'assigned',
      assigned_to_type: 'human',
      assigned_to_id: member.body.id,
    });
    const unassigned = await fixture.stack.admin<Json>('POST', `${base}/assign`, { type: null, id: null });
    expect(unassigned.body).toMatchObject({ status: 'open', assigned_to_type: null, assigned_to_id: null });
    const resolved = await fixture.stack.admin<Json>('POST', `${base}/resolve`);
    expect(resolved.body).toMatchObject({ status: 'resolved' });
    expect((await fixture.stack.admin<Json>('POST', `${base}/resolve`)).status).toBe(200);

    await waitFor(() => eventsOf(fixture.receiver, ws.id).length >= 5, { what: 'five events' });
    expect(eventsOf(fixture.receiver, ws.id).slice(2)).toEqual([
      {
        event: 'conversation.assigned',
        workspace_id: ws.id,
        conversation_id: conversationId,
        status: { assigned_to_type: 'human', assigned_to_id: member.body.id },
      },
      {
        event: 'conversation.assigned',
        workspace_id: ws.id,
        conversation_id: conversationId,
        status: { assigned_to_type: null, assigned_to_id: null },
      },
      {
        event: 'conversation.resolved',
        workspace_id: ws.id,
        conversation_id: conversationId,
        status: { value: 'resolved' },
      },
    ]);

    // A send into the resolved conversation reopens it.
    await send(ws.key, { phone: '+5511922220001', message: 'de volta', channel: 'alt-a' });
    const read = await fixture.stack.admin<Json & { messages: Json[] }>('GET', base);
    expect(read.body).toMatchObject({
      id: conversationId,
      status: 'open',
      contact: { phone: '+5511922220001' },
      integration: { id: ws.integrationId, channel: 'alt-a', provider: 'chat' },
    });
    expect(read.body.messages.map((m) => [m.text, m.direction, m.status])).toEqual([
      ['com agente', 'outbound', 'sent'],
      ['de volta', 'outbound', 'sent'],
    ]);
    const contact = await fixture.stack.admin<Json>(
      'GET',
      `/admin/v1/workspaces/${ws.id}/contacts/${sent.body.contactId}`,
    );
    expect(contact.body).toMatchObject({ id: sent.body.contactId, phone: '+5511922220001', name: null });
  });

  it('refuses assignees and agents of another workspace, and hides other workspaces conversations', async () => {
    const a = await workspace('panel-2a');
    const b = await workspace('panel-2b');
    const agentOfB = await fixture.stack.admin<{ id: string }>(
      'POST',
      `/admin/v1/workspaces/${b.id}/agents`,
      {
        name: 'B',
      },
    );
    const withForeignAgent = await send(a.key, {
      phone: '+5511922220002',
      message: 'x',
      channel: 'alt-a',
      agentId: agentOfB.body.id,
    });
    expect(withForeignAgent).toEqual({
      status: 400,
      body: { error: 'agentId não é um agente deste workspace' },
    });

    const sent = await send(a.key, { phone: '+5511922220002', message: 'x', channel: 'alt-a' });
    const conversationId = sent.body.conversationId as string;
    const foreign = await fixture.stack.admin<Json>(
      'POST',
      `/admin/v1/workspaces/${a.id}/conversations/${conversationId}/assign`,
      {
        type: 'agent',
        id: agentOfB.body.id,
      },
    );
    expect(foreign).toEqual({ status: 400, body: { error: 'id não é um agente deste workspace' } });
    for (const path of [`conversations/${conversationId}`, `contacts/${sent.body.contactId}`]) {
      expect((await fixture.stack.admin('GET', `/admin/v1/workspaces/${b.id}/${path}`)).status).toBe(404);
    }
    expect(
      (
        await fixture.stack.admin(
          'POST',
          `/admin/v1/workspaces/${b.id}/conversations/${conversationId}/resolve`,
        )
      ).status,
    ).toBe(404);
    expect(
      (await fixture.stack.admin('GET', `/admin/v1/workspaces/${a.id}/conversations/${randomUUID()}`)).body,
    ).toEqual({
      error: 'Conversa não encontrada ou não pertence a este workspace',
    });
  });

  it("chooses integrations as the spec says: named and connected, or the channel's latest connected", async () => {
    const ws = await workspace('panel-3');
    const second = await fixture.stack.admin<{ id: string }>(
      'POST',
      `/admin/v1/workspaces/${ws.id}/integrations`,
      {
        channel: 'alt-a',
        config: { base_url: `${fixture.stack.sandboxUrl}/alt-a`, instance: 'panel-3-second', api_key: 'k2' },
      },
    );
    const latest = await send(ws.key, { phone: '+5511922220003', message: 'a', channel: 'alt-a' });
    const conversation = await fixture.stack.admin<Json>(
      'GET',
      `/admin/v1/workspaces/${ws.id}/conversations/${latest.body.conversationId}`,
    );
    expect(conversation.body.integration).toMatchObject({ id: second.body.id });

    const named = await send(ws.key, {
      phone: '+5511922220003',
      message: 'b',
      channel: 'alt-a',
      integrationId: ws.integrationId,
    });
    expect(named.body).toMatchObject({
      contactCreated: false,
      conversationCreated: true,
      contactId: latest.body.contactId,
    });

    await fixture.stack.admin('PATCH', `/admin/v1/workspaces/${ws.id}/integrations/${ws.integrationId}`, {
      status: 'disconnected',
    });
    const disconnected = await send(ws.key, {
      phone: '+5511922220003',
      message: 'c',
      channel: 'alt-a',
      integrationId: ws.integrationId,
    });
    expect(disconnected).toEqual({ status: 400, body: { error: 'Integração não está conectada' } });
    const external = await fixture.stack.api('/api/external/messages/send', ws.key, {
      conversation_id: named.body.conversationId,
      text: 'x',
    });
    expect(external).toEqual({ status: 400, body: { error: 'Integração não está conectada' } });
    const unknown = await send(ws.key, {
      phone: '+5511922220003',
      message: 'd',
      channel: 'alt-a',
      integrationId: randomUUID(),
    });
    expect(unknown.status).toBe(404);
    const otherChannel = await send(ws.key, { phone: '+5511922220003', message: 'e', channel: 'alt-b' });
    expect(otherChannel).toEqual({
      status: 404,
      body: { error: 'Nenhuma integração conectada do canal "alt-b" neste workspace' },
    });
  });
});
