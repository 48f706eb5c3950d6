import { randomUUID } from 'node:crypto';
import { waitFor } from '@inbox/testkit';
import { describe, expect, it } from 'vitest';
import { eventsOf, evolutionConfig, type Json, useStack } from './support/fixtures.js';

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
      config: await evolutionConfig(fixture.stack, instance, `key-${instance}`),
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

  it('announces an assignment that changes something: the same agentId again leads to message.sent alone', async () => {
    const ws = await workspace('panel-5');
    const agent = await fixture.stack.admin<{ id: string }>('POST', `/admin/v1/workspaces/${ws.id}/agents`, {
      name: 'Robô',
    });
    const other = await fixture.stack.admin<{ id: string }>('POST', `/admin/v1/workspaces/${ws.id}/agents`, {
      name: 'Outro',
    });
    const body = { phone: '+5511922220005', channel: 'alt-a' };
    for (const [message, agentId] of [
      ['um', agent.body.id],
      ['dois', agent.body.id],
      ['três', other.body.id],
    ] as const)
      expect((await send(ws.key, { ...body, message, agentId })).status).toBe(200);
    await waitFor(() => eventsOf(fixture.receiver, ws.id).length >= 5, { what: 'five events' });
    expect(
      eventsOf(fixture.receiver, ws.id).map((e) =>
        e.event === 'message.sent'
          ? (e.message as Json).text
          : `${e.event} ${(e.status as Json).assigned_to_id === agent.body.id ? 'Robô' : 'Outro'}`,
      ),
    ).toEqual(['conversation.assigned Robô', 'um', 'dois', 'conversation.assigned Outro', 'três']);
  });

  it("chooses integrations as the spec says: named and connected, or the channel's latest connected", async () => {
    const ws = await workspace('panel-3');
    const second = await fixture.stack.admin<{ id: string }>(
      'POST',
      `/admin/v1/workspaces/${ws.id}/integrations`,
      {
        channel: 'alt-a',
        config: await evolutionConfig(fixture.stack, 'panel-3-second', 'k2'),
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

    // Connected again, the first is the channel's most recently connected (not the newest created): the
    // default follows it.
    const reconnected = await fixture.stack.admin(
      'PATCH',
      `/admin/v1/workspaces/${ws.id}/integrations/${ws.integrationId}`,
      { status: 'connected' },
    );
    expect(reconnected.status).toBe(200);
    const followed = await send(ws.key, { phone: '+5511922220004', message: 'f', channel: 'alt-a' });
    expect(followed.status).toBe(200);
    const followedConversation = await fixture.stack.admin<Json>(
      'GET',
      `/admin/v1/workspaces/${ws.id}/conversations/${followed.body.conversationId}`,
    );
    expect(followedConversation.body.integration).toMatchObject({ id: ws.integrationId });
  });

  it("lists what the panel shows: workspaces, integrations, team, the inbox by status and activity, a board's cards", async () => {
    const ws = await workspace('panel-4');
    const other = await workspace('panel-4-other');
    const base = `/admin/v1/workspaces/${ws.id}`;

    const workspaces = await fixture.stack.admin<{ workspaces: Json[] }>('GET', '/admin/v1/workspaces');
    const names = workspaces.body.workspaces.map((w) => w.name);
    // The newest first.
    expect(names.indexOf('panel-4-other')).toBeLessThan(names.indexOf('panel-4'));
    expect(workspaces.body.workspaces.find((w) => w.id === ws.id)).toMatchObject({
      workspace_id: ws.id,
      status: 'active',
    });
    expect((await fetch(`${fixture.stack.gatewayUrl}/admin/v1/workspaces`)).status).toBe(401);

    const integrations = await fixture.stack.admin<{ integrations: Json[] }>('GET', `${base}/integrations`);
    expect(integrations.body.integrations).toEqual([
      expect.objectContaining({
        id: ws.integrationId,
        channel: 'alt-a',
        provider: 'chat',
        status: 'connected',
      }),
    ]);
    expect(JSON.stringify(integrations.body)).not.toContain('key-panel-4');

    await fixture.stack.admin('POST', `${base}/members`, { name: 'Zé', email: 'ze@example.com' });
    const ana = await fixture.stack.admin<{ id: string }>('POST', `${base}/members`, {
      name: 'Ana',
      email: 'ana@example.com',
    });
    const bia = await fixture.stack.admin<{ id: string }>('POST', `${base}/agents`, { name: 'Bia' });
    await fixture.stack.admin('POST', `/admin/v1/workspaces/${other.id}/agents`, { name: 'Outra' });
    const members = await fixture.stack.admin<{ members: Json[] }>('GET', `${base}/members`);
    expect(members.body.members.map((m) => [m.name, m.email])).toEqual([
      ['Ana', 'ana@example.com'],
      ['Zé', 'ze@example.com'],
    ]);
    const agents = await fixture.stack.admin<{ agents: Json[] }>('GET', `${base}/agents`);
    expect(agents.body.agents).toEqual([expect.objectContaining({ id: bia.body.id, name: 'Bia' })]);

    // Three conversations; the newest activity first, each with its newest message.
    const ids: string[] = [];
    for (const [i, phone] of ['+5511922240001', '+5511922240002', '+5511922240003'].entries()) {
      const sent = await send(ws.key, { phone, message: `mensagem ${i + 1}`, channel: 'alt-a' });
      ids.push(sent.body.conversationId as string);
    }
    const list = (query = '') =>
      fixture.stack.admin<{ conversations: Json[]; older_before: string | null }>(
        'GET',
        `${base}/conversations${query}`,
      );
    const all = await list();
    expect(all.body.conversations.map((c) => c.id)).toEqual([ids[2], ids[1], ids[0]]);
    expect(all.body.conversations[0]).toMatchObject({
      contact: { phone: '+5511922240003' },
      integration: { id: ws.integrationId, channel: 'alt-a' },
      status: 'open',
      last_message: { text: 'mensagem 3', direction: 'outbound' },
    });
    expect(all.body.older_before).toBeNull();

    // A reply written in the panel is a person's, goes out on the channel, and moves the conversation up.
    const reply = await fixture.stack.admin<Json>('POST', `${base}/conversations/${ids[0]}/messages`, {
      text: 'Resposta do painel',
      sender_name: 'Ana',
    });
    expect(reply).toMatchObject({ status: 201, body: { success: true, conversation_id: ids[0] } });
    const thread = await fixture.stack.admin<{ messages: Json[] }>('GET', `${base}/conversations/${ids[0]}`);
    expect(thread.body.messages.at(-1)).toMatchObject({
      text: 'Resposta do painel',
      direction: 'outbound',
      sender_type: 'human',
      sender_name: 'Ana',
      status: 'sent',
    });
    await waitFor(
      () =>
        eventsOf(fixture.receiver, ws.id, 'message.sent').some(
          (e) =>
            (e.message as Json).text === 'Resposta do painel' && (e.status as Json).sender_type === 'human',
        ),
      { what: 'the reply as message.sent by a human' },
    );
    expect((await list()).body.conversations.map((c) => c.id)).toEqual([ids[0], ids[2], ids[1]]);

    // Pages: two, then the rest from where the first ended.
    const first = await list('?limit=2');
    expect(first.body.conversations.map((c) => c.id)).toEqual([ids[0], ids[2]]);
    expect(first.body.older_before).toBe(ids[2]);
    const second = await list(`?limit=2&before=${first.body.older_before}`);
    expect(second.body.conversations.map((c) => c.id)).toEqual([ids[1]]);
    expect(second.body.older_before).toBeNull();

    // By status.
    await fixture.stack.admin('POST', `${base}/conversations/${ids[1]}/assign`, {
      type: 'human',
      id: ana.body.id,
    });
    await fixture.stack.admin('POST', `${base}/conversations/${ids[2]}/resolve`);
    expect((await list('?status=assigned')).body.conversations.map((c) => c.id)).toEqual([ids[1]]);
    expect((await list('?status=resolved')).body.conversations.map((c) => c.id)).toEqual([ids[2]]);
    expect((await list('?status=open')).body.conversations.map((c) => c.id)).toEqual([ids[0]]);
    expect(await list('?status=closed')).toEqual({
      status: 400,
      body: { error: 'status deve ser "open", "assigned" ou "resolved"' },
    });
    expect(await list('?limit=201')).toEqual({
      status: 400,
      body: { error: 'limit deve ser inteiro de 0 a 200' },
    });
    // Another workspace sees none of them, and cannot reply into them.
    const foreign = await fixture.stack.admin<{ conversations: Json[] }>(
      'GET',
      `/admin/v1/workspaces/${other.id}/conversations`,
    );
    expect(foreign.body.conversations).toEqual([]);
    expect(
      await fixture.stack.admin('POST', `/admin/v1/workspaces/${other.id}/conversations/${ids[0]}/messages`, {
        text: 'x',
      }),
    ).toEqual({ status: 404, body: { error: 'Conversa não encontrada ou não pertence a este workspace' } });

    // A board: the cards of a pipeline, moved by the panel as the public lead move does.
    const pipeline = await fixture.stack.admin<{ id: string }>('POST', `${base}/pipelines`, {
      name: 'Vendas',
      stages: [
        { key: 'novo', name: 'Novo' },
        { key: 'ganho', name: 'Ganho' },
      ],
    });
    const contactOf = async (conversationId: string) =>
      (
        await fixture.stack.admin<{ contact: { id: string } }>(
          'GET',
          `${base}/conversations/${conversationId}`,
        )
      ).body.contact.id;
    const [maria, joao] = [await contactOf(ids[0]!), await contactOf(ids[1]!)];
    const cards = `${base}/pipelines/${pipeline.body.id}/contacts`;
    expect((await fixture.stack.admin<{ contacts: Json[] }>('GET', cards)).body.contacts).toEqual([]);
    expect(await fixture.stack.admin('PUT', `${cards}/${maria}`, { stage: 'novo' })).toEqual({
      status: 200,
      body: { success: true, contact_id: maria, pipeline_id: pipeline.body.id, stage: 'novo' },
    });
    await fixture.stack.admin('PUT', `${cards}/${joao}`, { stage: 'novo', conversation_id: ids[1] });
    await fixture.stack.admin('PUT', `${cards}/${maria}`, { stage: 'ganho' });
    const board = await fixture.stack.admin<{ contacts: Json[] }>('GET', cards);
    expect(board.body.contacts.map((c) => [c.phone, c.stage])).toEqual([
      ['+5511922240001', 'ganho'],
      ['+5511922240002', 'novo'],
    ]);
    expect(
      (await fixture.stack.admin<{ contacts: Json[] }>('GET', `${cards}?limit=1`)).body.contacts,
    ).toHaveLength(1);
    const history = await fixture.stack.admin<{ moves: Json[] }>(
      'GET',
      `${base}/pipelines/${pipeline.body.id}/contacts/${maria}/history`,
    );
    expect(history.body.moves.map((m) => m.moved_by)).toEqual(['admin: painel', 'admin: painel']);
    await waitFor(
      async () =>
        (
          await fixture.stack.admin<{ messages: Json[] }>('GET', `${base}/conversations/${ids[1]}`)
        ).body.messages.some((m) => m.direction === 'internal'),
      { what: 'the lead move as a system event of the conversation' },
    );
    expect(await fixture.stack.admin('PUT', `${cards}/${maria}`, { stage: 'perdido' })).toEqual({
      status: 400,
      body: { error: 'stage "perdido" não existe no pipeline "Vendas"' },
    });
    expect(
      (
        await fixture.stack.admin(
          'GET',
          `/admin/v1/workspaces/${other.id}/pipelines/${pipeline.body.id}/contacts`,
        )
      ).status,
    ).toBe(404);
  });

  it('sends a test event to one endpoint, whatever it subscribed to, and refuses a disabled one', async () => {
    const ws = await workspace('panel-5');
    const base = `/admin/v1/workspaces/${ws.id}`;
    const hook = await fixture.stack.admin<{ id: string }>('POST', `${base}/webhooks`, {
      url: `${fixture.receiver.url}/panel-5-test`,
      events: ['message.received'],
      secret: 'segredo-de-teste',
    });
    const scheduled = await fixture.stack.admin<Json>('POST', `${base}/webhooks/${hook.body.id}/test`);
    expect(scheduled).toMatchObject({ status: 201, body: { event_type: 'webhook.test', status: 'pending' } });
    const received = await waitFor(
      () =>
        fixture.receiver.received.find(
          (r) => r.headers['x-webhook-event'] === 'webhook.test' && r.rawBody.includes(ws.id),
        ),
      { what: 'the test event' },
    );
    expect(JSON.parse(received.rawBody)).toEqual({
      event: 'webhook.test',
      workspace_id: ws.id,
      webhook_id: hook.body.id,
      sent_at: expect.any(String),
    });
    expect(received.headers['x-webhook-id']).toBe(scheduled.body.event_id);
    await waitFor(
      async () =>
        (
          await fixture.stack.admin<Json>(
            'GET',
            `${base}/webhooks/${hook.body.id}/deliveries/${scheduled.body.id}`,
          )
        ).body.status === 'delivered',
      { what: 'the test delivery logged as delivered' },
    );
    // Only the endpoint asked got it: not the workspace's other one, subscribed to every event.
    const tests = fixture.receiver.received.filter(
      (r) => r.headers['x-webhook-event'] === 'webhook.test' && r.rawBody.includes(ws.id),
    );
    expect(tests).toHaveLength(1);

    await fixture.stack.admin('PATCH', `${base}/webhooks/${hook.body.id}`, { enabled: false });
    expect(await fixture.stack.admin('POST', `${base}/webhooks/${hook.body.id}/test`)).toEqual({
      status: 409,
      body: { error: 'Webhook desativado: ative-o para enviar um evento de teste' },
    });
    const other = await workspace('panel-5-other');
    expect(
      await fixture.stack.admin('POST', `/admin/v1/workspaces/${other.id}/webhooks/${hook.body.id}/test`),
    ).toEqual({ status: 404, body: { error: 'Webhook não encontrado neste workspace' } });
  });
});
