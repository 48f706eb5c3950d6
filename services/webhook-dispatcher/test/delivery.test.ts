import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import type { EventEnvelope } from '@inbox/contracts';
import { createPool, migrate, type Pool } from '@inbox/db';
import { createLogger, SecretBox } from '@inbox/service-kit';
import { createDatabase } from '@inbox/testkit';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { AddressPolicy } from '../src/domain/address-policy.js';
import { guardedAgent } from '../src/domain/guarded-http.js';
import { type DeliverDeps, deliverEvent } from '../src/handlers/deliver-event.js';
import { DeliveryStore } from '../src/store/deliveries.js';
import { EndpointStore } from '../src/store/endpoints.js';

let pool: Pool;
let deps: DeliverDeps;
const servers: Server[] = [];

async function receiver(handle: (res: import('node:http').ServerResponse) => void) {
  const hits: string[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      hits.push(Buffer.concat(chunks).toString());
      handle(res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  servers.push(server);
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, hits };
}

function messageSent(workspaceId: string): EventEnvelope {
  const id = randomUUID();
  return {
    id,
    type: 'message.sent',
    workspace_id: workspaceId,
    occurred_at: new Date().toISOString(),
    data: { event: 'message.sent', workspace_id: workspaceId, n: id },
  };
}

beforeAll(async () => {
  const url = await createDatabase(inject('infra').postgresAdminUrl);
  pool = createPool({ url, schema: 'dispatcher' });
  await migrate(pool, {
    schema: 'dispatcher',
    directory: fileURLToPath(new URL('../migrations', import.meta.url)),
  });
  const policy = AddressPolicy.fromSetting('127.0.0.0/8');
  deps = {
    endpoints: new EndpointStore(pool, new SecretBox(SecretBox.generateKey())),
    deliveries: new DeliveryStore(pool),
    agent: guardedAgent(policy, 1_000),
    policy,
    logger: createLogger('test', { level: 'silent' }),
    timeoutMs: 1_000,
  };
});
afterAll(async () => {
  for (const server of servers) server.closeAllConnections();
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  await pool.end();
});

describe('webhook delivery', () => {
  it('posts once when the same event is handled twice at the same time', async () => {
    const workspace = randomUUID();
    const slow = await receiver((res) => setTimeout(() => res.end('ok'), 200));
    await deps.endpoints.create(workspace, { url: slow.url, events: ['*'] });
    const event = messageSent(workspace);
    await Promise.all([deliverEvent(deps, event), deliverEvent(deps, event), deliverEvent(deps, event)]);
    await deliverEvent(deps, event);
    expect(slow.hits).toHaveLength(1);
  });

  it('ends an attempt at the timeout when the receiver never answers', async () => {
    const workspace = randomUUID();
    const silent = await receiver(() => undefined);
    const endpoint = await deps.endpoints.create(workspace, { url: silent.url, events: ['message.sent'] });
    await deliverEvent(deps, messageSent(workspace));
    const [delivery] = await deps.deliveries.history(workspace, endpoint.id);
    expect(delivery?.status).toBe('failed');
    expect(delivery?.attempts[0]?.status_code).toBeNull();
    expect(delivery?.attempts[0]?.duration_ms).toBeLessThan(5_000);
  });

  it('does not let a receiver that drips its body hold the attempt', async () => {
    const workspace = randomUUID();
    const drip = await receiver((res) => {
      res.writeHead(200);
      const timer = setInterval(() => res.write('.'), 300);
      res.on('close', () => clearInterval(timer));
    });
    const endpoint = await deps.endpoints.create(workspace, { url: drip.url, events: ['*'] });
    await deliverEvent(deps, messageSent(workspace));
    const [delivery] = await deps.deliveries.history(workspace, endpoint.id);
    expect(delivery?.status).toBe('delivered');
    expect(delivery?.attempts[0]?.duration_ms).toBeLessThan(1_000);
  });

  it('keeps each workspace to its own endpoints', async () => {
    const mine = randomUUID();
    const theirs = randomUUID();
    const hook = await receiver((res) => res.end('ok'));
    await deps.endpoints.create(theirs, { url: hook.url, events: ['*'] });
    await deliverEvent(deps, messageSent(mine));
    expect(hook.hits).toHaveLength(0);
  });
});
