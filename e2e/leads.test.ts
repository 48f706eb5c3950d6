import { randomUUID } from 'node:crypto';
import { waitFor } from '@inbox/testkit';
import { describe, expect, it } from 'vitest';
import { callApi, eventsOf, evolutionConfig, type Json, useStack } from './support/fixtures.js';

const fixture = useStack();

const call = (method: string, path: string, key: string, body?: unknown) =>
  callApi(fixture.stack, method, path, key, body);

async function workspaceWithLead(name: string) {
  const ws = await fixture.stack.admin<{ workspace_id: string; api_key: string }>(
    'POST',
    '/admin/v1/workspaces',
    {
      name,
    },
  );
  const id = ws.body.workspace_id;
  await fixture.stack.admin('POST', `/admin/v1/workspaces/${id}/integrations`, {
    channel: 'alt-a',
    config: await evolutionConfig(fixture.stack, name, `k-${name}`),
  });
  await fixture.stack.admin('POST', `/admin/v1/workspaces/${id}/webhooks`, {
    url: `${fixture.receiver.url}/${name}`,
    events: ['*'],
  });
  const pipeline = await fixture.stack.admin<Json & { id: string }>(
    'POST',
    `/admin/v1/workspaces/${id}/pipelines`,
    {
      name: 'Vendas',
      stages: [
        { key: 'novo', name: 'Novo' },
        { key: 'qualificado', name: 'Qualificado' },
        { key: 'ganho', name: 'Ganho' },
      ],
    },
  );
  expect(pipeline.status).toBe(201);
  const sent = await call('POST', '/api/v1/send-message', ws.body.api_key, {
    phone: `+55119${String(Math.floor(Math.random() * 1e8)).padStart(8, '0')}`,
    message: 'oi',
    channel: 'alt-a',
  });
  return {
    id,
    key: ws.body.api_key,
    pipelineId: pipeline.body.id,
    contactId: sent.body.contactId as string,
    conversationId: sent.body.conversationId as string,
    phone: '',
  };
}

const move = (ws: { key: string }, contactId: string, body: unknown) =>
  call('PATCH', `/api/v1/leads/${contactId}`, ws.key, body);

describe('PATCH /api/v1/leads/{id}', () => {
  it('moves with a system event in the conversation, never sent, and keeps one position with history', async () => {
    const ws = await workspaceWithLead('leads-1');
    const moved = await move(ws, ws.contactId, {
      pipeline_id: ws.pipelineId,
      stage: 'qualificado',
      conversation_id: ws.conversationId,
    });
    expect(moved).toEqual({
      status: 200,
      body: { success: true, contact_id: ws.contactId, pipeline_id: ws.pipelineId, stage: 'qualificado' },
    });
    const conversation = await waitFor(
      async () => {
        const read = await fixture.stack.admin<Json & { messages: Json[] }>(
          'GET',
          `/admin/v1/workspaces/${ws.id}/conversations/${ws.conversationId}`,
        );
        return read.body.messages.some((m) => m.sender_type === 'system') ? read.body : undefined;
      },
      { what: 'the system event in the conversation' },
    );
    const system = conversation.messages.find((m) => m.sender_type === 'system')!;
    expect(system).toMatchObject({
      direction: 'internal',
      status: 'recorded',
      text: 'Lead movido para "Qualificado" no pipeline "Vendas"',
      provider_message_id: null,
    });

    // Without conversation_id the conversation is untouched; the same stage again records nothing.
    expect((await move(ws, ws.contactId, { pipeline_id: ws.pipelineId, stage: 'ganho' })).status).toBe(200);
    expect((await move(ws, ws.contactId, { pipeline_id: ws.pipelineId, stage: 'ganho' })).status).toBe(200);
    const history = await fixture.stack.admin<{ moves: Json[] }>(
      'GET',
      `/admin/v1/workspaces/${ws.id}/pipelines/${ws.pipelineId}/contacts/${ws.contactId}/history`,
    );
    expect(history.body.moves.map((m) => [m.from_stage, m.to_stage, m.conversation_id])).toEqual([
      [null, 'qualificado', ws.conversationId],
      ['qualificado', 'ganho', null],
    ]);
    expect(String(history.body.moves[0]!.moved_by)).toMatch(/^sk_live_.{4}….{4}$/);
    // A page at a time, the next after the last move of one.
    const historyPath = `/admin/v1/workspaces/${ws.id}/pipelines/${ws.pipelineId}/contacts/${ws.contactId}/history`;
    const first = await fixture.stack.admin<{ moves: Json[] }>('GET', `${historyPath}?limit=1`);
    expect(first.body.moves.map((m) => m.to_stage)).toEqual(['qualificado']);
    const next = await fixture.stack.admin<{ moves: Json[] }>(
      'GET',
      `${historyPath}?limit=1&after=${first.body.moves[0]!.id}`,
    );
    expect(next.body.moves.map((m) => m.to_stage)).toEqual(['ganho']);
    const past = await fixture.stack.admin<{ moves: Json[] }>(
      'GET',
      `${historyPath}?after=${next.body.moves[0]!.id}`,
    );
    expect(past.body.moves).toEqual([]);
    // A move that is not this contact's is no place to read on from.
    const unknown = await fixture.stack.admin<Json>('GET', `${historyPath}?after=${ws.conversationId}`);
    expect(unknown).toEqual({
      status: 400,
      body: { error: 'after não é um movimento deste contato neste pipeline' },
    });
    const contact = await fixture.stack.admin<Json>(
      'GET',
      `/admin/v1/workspaces/${ws.id}/contacts/${ws.contactId}`,
    );
    expect(contact.body.stages).toEqual([
      expect.objectContaining({
        pipeline_id: ws.pipelineId,
        pipeline_name: 'Vendas',
        stage: 'ganho',
        stage_name: 'Ganho',
      }),
    ]);

    const after = await fixture.stack.admin<Json & { messages: Json[] }>(
      'GET',
      `/admin/v1/workspaces/${ws.id}/conversations/${ws.conversationId}`,
    );
    expect(after.body.messages.filter((m) => m.sender_type === 'system')).toHaveLength(1);
    // Nothing reached the provider but the first message, and no message.sent announced the event.
    const atProvider = (await (
      await fetch(`${fixture.stack.sandboxUrl}/_sandbox/sent?channel=alt-a`)
    ).json()) as Json[];
    expect(atProvider.filter((entry) => entry.account === 'leads-1')).toHaveLength(1);
    const sentEvents = eventsOf(fixture.receiver, ws.id, 'message.sent');
    expect(sentEvents).toHaveLength(1);
  });

  it('answers every row of the leads error table with its exact text', async () => {
    const ws = await workspaceWithLead('leads-2');
    const other = await workspaceWithLead('leads-3');
    const rows: Array<[string, unknown, number, string]> = [
      [randomUUID(), { pipeline_id: ws.pipelineId, stage: 'novo' }, 404, 'Contato não encontrado'],
      [other.contactId, { pipeline_id: ws.pipelineId, stage: 'novo' }, 404, 'Contato não encontrado'],
      [
        ws.contactId,
        { pipeline_id: randomUUID(), stage: 'novo' },
        400,
        'pipeline_id não encontrado neste workspace',
      ],
      [
        ws.contactId,
        { pipeline_id: other.pipelineId, stage: 'novo' },
        400,
        'pipeline_id não encontrado neste workspace',
      ],
      [
        ws.contactId,
        { pipeline_id: ws.pipelineId, stage: 'Novo' },
        400,
        'stage "Novo" não existe no pipeline "Vendas"',
      ],
      [
        ws.contactId,
        { pipeline_id: ws.pipelineId, stage: 'novo', conversation_id: other.conversationId },
        400,
        'conversation_id não pertence a este contato/workspace',
      ],
      [
        ws.contactId,
        { pipeline_id: ws.pipelineId, stage: 'novo', conversation_id: randomUUID() },
        400,
        'conversation_id não pertence a este contato/workspace',
      ],
      [ws.contactId, { stage: 'novo' }, 400, 'Parâmetros obrigatórios: pipeline_id, stage'],
      [ws.contactId, { pipeline_id: 'x', stage: 'novo' }, 400, 'pipeline_id deve ser um UUID'],
    ];
    for (const [contactId, body, status, error] of rows) {
      expect(await move(ws, contactId, body), JSON.stringify(body)).toEqual({ status, body: { error } });
    }
    // A conversation of another contact in the same workspace is refused too.
    const second = await call('POST', '/api/v1/send-message', ws.key, {
      phone: '+5511977770000',
      message: 'b',
      channel: 'alt-a',
    });
    expect(
      await move(ws, ws.contactId, {
        pipeline_id: ws.pipelineId,
        stage: 'novo',
        conversation_id: second.body.conversationId,
      }),
    ).toEqual({
      status: 400,
      body: { error: 'conversation_id não pertence a este contato/workspace' },
    });
    expect(
      (
        await call(
          'PATCH',
          `/api/v1/leads/${ws.contactId}`,
          'sk_live_0000000000000000000000000000000000000000',
          {},
        )
      ).body,
    ).toEqual({
      error: 'API Key inválida',
    });
    const history = await fixture.stack.admin<{ moves: Json[] }>(
      'GET',
      `/admin/v1/workspaces/${ws.id}/pipelines/${ws.pipelineId}/contacts/${ws.contactId}/history`,
    );
    expect(history.body.moves).toEqual([]);
  });

  it('fails cleanly and records nothing while messaging is down', async () => {
    const ws = await workspaceWithLead('leads-4');
    await fixture.stack.processes.get('messaging')!.stop();
    try {
      const answer = await move(ws, ws.contactId, { pipeline_id: ws.pipelineId, stage: 'ganho' });
      expect([503, 504]).toContain(answer.status);
      expect(typeof answer.body.error).toBe('string');
    } finally {
      await fixture.stack.restart('messaging');
    }
    const history = await fixture.stack.admin<{ moves: Json[] }>(
      'GET',
      `/admin/v1/workspaces/${ws.id}/pipelines/${ws.pipelineId}/contacts/${ws.contactId}/history`,
    );
    expect(history.body.moves).toEqual([]);
  });
});

describe('stage administration', () => {
  it('renames, adds, renames stages, reorders, and removes only with somewhere to put the contacts', async () => {
    const ws = await workspaceWithLead('leads-5');
    const base = `/admin/v1/workspaces/${ws.id}/pipelines/${ws.pipelineId}`;
    expect((await fixture.stack.admin<Json>('PATCH', base, { name: 'Funil' })).body.name).toBe('Funil');
    const added = await fixture.stack.admin<Json & { stages_config: Json[] }>('POST', `${base}/stages`, {
      key: 'perdido',
      name: 'Perdido',
      position: 1,
    });
    expect(added.body.stages_config.map((s) => s.key)).toEqual(['novo', 'perdido', 'qualificado', 'ganho']);
    expect((await fixture.stack.admin('POST', `${base}/stages`, { key: 'novo', name: 'Dup' })).status).toBe(
      400,
    );
    const renamed = await fixture.stack.admin<Json & { stages_config: Json[] }>(
      'PATCH',
      `${base}/stages/perdido`,
      {
        name: 'Perdida',
      },
    );
    expect(renamed.body.stages_config[1]).toMatchObject({ key: 'perdido', name: 'Perdida' });
    const reordered = await fixture.stack.admin<Json & { stages_config: Json[] }>(
      'PUT',
      `${base}/stage-order`,
      {
        keys: ['ganho', 'qualificado', 'perdido', 'novo'],
      },
    );
    expect(reordered.body.stages_config.map((s) => s.key)).toEqual([
      'ganho',
      'qualificado',
      'perdido',
      'novo',
    ]);
    expect((await fixture.stack.admin('PUT', `${base}/stage-order`, { keys: ['ganho'] })).status).toBe(400);

    await move(ws, ws.contactId, { pipeline_id: ws.pipelineId, stage: 'perdido' });
    const refused = await fixture.stack.admin<Json>('DELETE', `${base}/stages/perdido`);
    expect(refused.status).toBe(409);
    const removed = await fixture.stack.admin<Json & { stages_config: Json[] }>(
      'DELETE',
      `${base}/stages/perdido?move_to=novo`,
    );
    expect(removed.status).toBe(200);
    expect(removed.body.stages_config.map((s) => [s.key, s.contacts])).toEqual([
      ['ganho', 0],
      ['qualificado', 0],
      ['novo', 1],
    ]);
    const history = await fixture.stack.admin<{ moves: Json[] }>(
      'GET',
      `${base}/contacts/${ws.contactId}/history`,
    );
    expect(history.body.moves.at(-1)).toMatchObject({ from_stage: 'perdido', to_stage: 'novo' });
    const list = await fixture.stack.admin<{ pipelines: Json[] }>(
      'GET',
      `/admin/v1/workspaces/${ws.id}/pipelines`,
    );
    expect(list.body.pipelines.map((p) => p.id)).toEqual([ws.pipelineId]);
    expect(
      (await fixture.stack.admin('GET', `/admin/v1/workspaces/${ws.id}/pipelines/${randomUUID()}`)).status,
    ).toBe(404);
  });
});
