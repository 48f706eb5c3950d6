import { randomBytes, randomUUID } from 'node:crypto';
import { type ServiceProcessSpec, serviceProcessSpecs, startServiceProcess } from '@inbox/runtime';
import { createDatabase, freePort, type ManagedProcess, uniquePrefix, waitFor } from '@inbox/testkit';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
// Answers from the replicas are checked against the OpenAPI document too.
import './support/openapi-contract.js';
import { e2eBusUrl } from './support/test-stack.js';

// Two gateway processes on one Postgres, one NATS and one Redis: what two replicas behind a load
// balancer share.
const adminToken = `adm_${randomBytes(16).toString('hex')}`;
const gateways: ManagedProcess[] = [];
const urls: string[] = [];

beforeAll(async () => {
  const { postgresAdminUrl, redisUrl } = inject('infra');
  const databaseUrl = await createDatabase(postgresAdminUrl, 'replicas');
  const busPrefix = uniquePrefix();
  for (let i = 0; i < 2; i++) {
    const port = await freePort();
    const [spec] = serviceProcessSpecs({
      busUrl: e2eBusUrl(),
      databaseUrl,
      redisUrl,
      busPrefix,
      adminToken,
      encryptionKey: randomBytes(32).toString('base64'),
      logLevel: 'warn',
      ports: { gateway: port, connector: 0, messaging: 0, pipeline: 0, dispatcher: 0, sandbox: 0 },
    }).filter((s) => s.name === 'gateway') as [ServiceProcessSpec];
    gateways.push(await startServiceProcess(spec));
    urls.push(`http://127.0.0.1:${port}`);
  }
});
afterAll(async () => {
  await Promise.all(gateways.map((gateway) => gateway.stop()));
});

async function call(gateway: number, method: string, path: string, key: string | undefined, body?: unknown) {
  const response = await fetch(`${urls[gateway]}${path}`, {
    method,
    headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return {
    status: response.status,
    headers: response.headers,
    body: (await response.json()) as Record<string, string>,
  };
}

async function newWorkspace(): Promise<{ id: string; key: string }> {
  const created = await call(0, 'POST', '/admin/v1/workspaces', adminToken, { name: `ws ${randomUUID()}` });
  return { id: created.body.workspace_id!, key: created.body.api_key! };
}

describe('rate limit shared by two gateway processes', () => {
  it('refuses the 61st request of a minute across both, leaves other workspaces and external send alone', async () => {
    const limited = await newWorkspace();
    // Bodies that fail validation still count: the limit is decided before the body.
    for (let i = 0; i < 60; i++) {
      const path = ['/api/v1/send-message', '/api/v1/send-template', `/api/v1/leads/${randomUUID()}`][i % 3]!;
      const answer = await call(
        i % 2,
        path.startsWith('/api/v1/leads') ? 'PATCH' : 'POST',
        path,
        limited.key,
        {},
      );
      expect(answer.status, `request ${i + 1}`).toBe(400);
      expect(answer.headers.get('ratelimit-limit')).toBe('60');
      expect(answer.headers.get('ratelimit-remaining')).toBe(String(59 - i));
      expect(Number(answer.headers.get('ratelimit-reset'))).toBeGreaterThan(0);
    }
    // Every limited route is refused once the workspace's minute is spent, on either process.
    for (const [gateway, method, path] of [
      [0, 'POST', '/api/v1/send-message'],
      [1, 'POST', '/api/v1/send-message'],
      [0, 'POST', '/api/v1/send-template'],
      [1, 'PATCH', `/api/v1/leads/${randomUUID()}`],
    ] as const) {
      const refused = await call(gateway, method, path, limited.key, {});
      expect(refused.status).toBe(429);
      expect(refused.body).toEqual({ error: 'Muitas requisições. Limite: 60/min por workspace.' });
      const retryAfter = Number(refused.headers.get('retry-after'));
      expect(retryAfter).toBeGreaterThan(0);
      expect(retryAfter).toBeLessThanOrEqual(60);
      expect(refused.headers.get('ratelimit-remaining')).toBe('0');
    }

    const other = await newWorkspace();
    expect((await call(1, 'POST', '/api/v1/send-message', other.key, {})).status).toBe(400);

    for (let i = 0; i < 70; i++) {
      const external = await call(i % 2, 'POST', '/api/external/messages/send', limited.key, {});
      expect(external.status).toBe(400);
      expect(external.headers.get('ratelimit-limit')).toBeNull();
    }
  });
});

describe('key rotation and workspace status on every replica', () => {
  it('rotation: the old key fails and the new one works on both processes within a second', async () => {
    const ws = await newWorkspace();
    // Both replicas have the old key in their caches.
    for (const gateway of [0, 1])
      expect((await call(gateway, 'POST', '/api/v1/send-message', ws.key, {})).status).toBe(400);
    const rotated = await call(0, 'POST', `/admin/v1/workspaces/${ws.id}/api-key`, adminToken);
    expect(rotated.status).toBe(201);
    for (const gateway of [0, 1]) {
      await waitFor(
        async () => (await call(gateway, 'POST', '/api/v1/send-message', ws.key, {})).status === 401,
        {
          timeoutMs: 1_000,
          intervalMs: 20,
          what: `gateway ${gateway} to refuse the old key`,
        },
      );
      expect((await call(gateway, 'POST', '/api/v1/send-message', rotated.body.api_key, {})).status).toBe(
        400,
      );
    }
  });

  it('deactivation and reactivation reach both processes within a second', async () => {
    const ws = await newWorkspace();
    for (const gateway of [0, 1])
      expect((await call(gateway, 'POST', '/api/v1/send-message', ws.key, {})).status).toBe(400);
    expect(
      (await call(1, 'PATCH', `/admin/v1/workspaces/${ws.id}`, adminToken, { status: 'suspended' })).status,
    ).toBe(200);
    for (const gateway of [0, 1]) {
      await waitFor(
        async () => (await call(gateway, 'POST', '/api/v1/send-message', ws.key, {})).status === 403,
        {
          timeoutMs: 1_000,
          intervalMs: 20,
          what: `gateway ${gateway} to refuse the suspended workspace`,
        },
      );
    }
    expect(
      (await call(0, 'PATCH', `/admin/v1/workspaces/${ws.id}`, adminToken, { status: 'active' })).status,
    ).toBe(200);
    for (const gateway of [0, 1]) {
      await waitFor(
        async () => (await call(gateway, 'POST', '/api/v1/send-message', ws.key, {})).status === 400,
        {
          timeoutMs: 1_000,
          intervalMs: 20,
          what: `gateway ${gateway} to accept the reactivated workspace`,
        },
      );
    }
  });
});
