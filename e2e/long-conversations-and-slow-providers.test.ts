import { platformTexts } from '@inbox/contracts';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { callApi, evolutionConfig, sandbox, sentTo, useStack } from './support/fixtures.js';

// The connector gives up on a provider after one second here, so a held call is quick to test.
const fixture = useStack({ extraEnv: { PROVIDER_TIMEOUT_MS: '1000' }, rateLimitPerMinute: 1_000 });

const call = (method: string, path: string, key: string, body?: unknown, headers?: Record<string, string>) =>
  callApi(fixture.stack, method, path, key, body, headers);

async function workspace(name: string) {
  const ws = await fixture.stack.admin<{ workspace_id: string; api_key: string }>(
    'POST',
    '/admin/v1/workspaces',
    { name },
  );
  const id = ws.body.workspace_id;
  const integration = await fixture.stack.admin('POST', `/admin/v1/workspaces/${id}/integrations`, {
    channel: 'alt-a',
    config: await evolutionConfig(fixture.stack, name, `k-${name}`),
  });
  expect(integration.status).toBe(201);
  return { id, key: ws.body.api_key };
}

const phone = () => `+55119${String(Math.floor(Math.random() * 1e8)).padStart(8, '0')}`;

describe('a conversation longer than one bus message', () => {
  it('is read a page at a time, and lead moves naming it still work', async () => {
    const ws = await workspace('long-talk');
    const sent = await call('POST', '/api/v1/send-message', ws.key, {
      phone: phone(),
      message: 'oi',
      channel: 'alt-a',
    });
    expect(sent.status).toBe(200);
    const conversationId = sent.body.conversationId as string;
    // 400 messages of 4 KB of multi-byte text: about 2.4 MB, more than twice what one NATS message carries.
    const db = new pg.Client({ connectionString: fixture.stack.databaseUrl });
    await db.connect();
    try {
      await db.query(
        `insert into messaging.messages (id, workspace_id, conversation_id, direction, sender_type, text, status, created_at)
         select gen_random_uuid(), $1, $2, 'inbound', 'contact', repeat('ç', 4096), 'received',
                now() - make_interval(secs => 1000 - n)
           from generate_series(1, 400) as n`,
        [ws.id, conversationId],
      );
    } finally {
      await db.end();
    }

    const path = `/admin/v1/workspaces/${ws.id}/conversations/${conversationId}`;
    const seen = new Set<string>();
    let before: string | null = null;
    let pages = 0;
    do {
      const page: { status: number; body: { messages: Array<{ id: string }>; older_before: string | null } } =
        await fixture.stack.admin<{
          messages: Array<{ id: string }>;
          older_before: string | null;
        }>('GET', `${path}?limit=200${before ? `&before=${before}` : ''}`);
      expect(page.status).toBe(200);
      expect(page.body.messages.length).toBeGreaterThan(0);
      for (const message of page.body.messages) {
        expect(seen.has(message.id)).toBe(false);
        seen.add(message.id);
      }
      before = page.body.older_before;
      pages++;
    } while (before && pages < 100);
    expect(seen.size).toBe(401);
    expect(pages).toBeGreaterThan(2);

    const first = await fixture.stack.admin<{ messages: unknown[] }>('GET', path);
    expect(first.status).toBe(200);
    expect(first.body.messages.length).toBeLessThanOrEqual(50);
    expect((await fixture.stack.admin('GET', `${path}?limit=500`)).body).toEqual({
      error: 'limit deve ser inteiro de 0 a 200',
    });

    const pipeline = await fixture.stack.admin<{ id: string }>(
      'POST',
      `/admin/v1/workspaces/${ws.id}/pipelines`,
      {
        name: 'Vendas',
        stages: [
          { key: 'novo', name: 'Novo' },
          { key: 'ganho', name: 'Ganho' },
        ],
      },
    );
    const moved = await call('PATCH', `/api/v1/leads/${sent.body.contactId}`, ws.key, {
      pipeline_id: pipeline.body.id,
      stage: 'ganho',
      conversation_id: conversationId,
    });
    expect(moved.status).toBe(200);
  });
});

describe('a provider that does not answer in time', () => {
  it('answers 504 saying the outcome is unknown, leaves the message pending rather than failed, and never sends it again', async () => {
    const ws = await workspace('slow-provider');
    expect(
      (await sandbox(fixture.stack, '/_sandbox/faults', { channel: 'alt-a', mode: 'timeout' })).status,
    ).toBe(200);
    try {
      const request = { phone: phone(), message: 'você está aí?', channel: 'alt-a' };
      const idempotencyKey = { 'idempotency-key': 'slow-once' };
      const sent = await call('POST', '/api/v1/send-message', ws.key, request, idempotencyKey);
      expect(sent).toEqual({ status: 504, body: { error: platformTexts.providerTimedOut('alt-a') } });
      // The 5xx freed the key, and the provider answers again: a retry finds the attempt of unknown
      // outcome and says so by the message's id rather than calling the provider a second time.
      await sandbox(fixture.stack, '/_sandbox/faults', { channel: 'alt-a', mode: 'off' });
      const retried = await call('POST', '/api/v1/send-message', ws.key, request, idempotencyKey);
      expect(retried.status).toBe(409);
      expect(retried.body.error).toMatch(
        /^O envio da mensagem [0-9a-f-]{36} ao provedor foi iniciado e o resultado é desconhecido: ela não será enviada de novo, para não duplicar o envio$/,
      );
      expect(await sentTo(fixture.stack, request.phone.replace('+', ''))).toHaveLength(0);
      const db = new pg.Client({ connectionString: fixture.stack.databaseUrl });
      await db.connect();
      try {
        const { rows } = await db.query(
          `select status from messaging.messages where workspace_id = $1 and text = 'você está aí?'`,
          [ws.id],
        );
        expect(rows).toEqual([{ status: 'pending' }]);
      } finally {
        await db.end();
      }
    } finally {
      await sandbox(fixture.stack, '/_sandbox/faults', { channel: 'alt-a', mode: 'off' });
    }
  });
});
