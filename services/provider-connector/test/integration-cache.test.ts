import { randomUUID } from 'node:crypto';
import { InProcessBus } from '@inbox/bus';
import { AppError, errorTexts, platformTexts } from '@inbox/contracts';
import { createPool, type Pool } from '@inbox/db';
import { createLogger, prepareSchema, SecretBox, type ServiceEngine } from '@inbox/service-kit';
import { createDatabase } from '@inbox/testkit';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { connectorService } from '../src/service.js';

// Sends read their integration from each replica's memory for a few seconds; a change made through one
// replica must reach the other at once (by notice), or a disconnected integration would keep sending.
// Two replicas on one database and one bus, whose commands alternate between them. The alt-b
// integrations have no instance yet, so creating them calls no provider.

const logger = createLogger('provider-connector', { level: 'silent' });
const bus = new InProcessBus();
const engines: ServiceEngine[] = [];
const pools: Pool[] = [];
const workspaceId = randomUUID();

beforeAll(async () => {
  const url = await createDatabase(inject('infra').postgresAdminUrl);
  const encryptionKey = SecretBox.generateKey();
  for (let i = 0; i < 2; i++) {
    const definition = connectorService({
      encryptionKey,
      publicConnectorUrl: 'http://127.0.0.1:9',
      allowedCidrs: '127.0.0.0/8',
    });
    const pool = createPool({ url, schema: 'connector' });
    pools.push(pool);
    await prepareSchema(pool, definition);
    const engine = await definition.create({ pool, bus, logger });
    await engine.start();
    engines.push(engine);
  }
});

afterAll(async () => {
  for (const engine of engines) await engine.stop?.();
  for (const pool of pools) await pool.end();
});

const resolve = (integrationId?: string) =>
  bus
    .request('cmd.connector.resolve-integration', {
      workspace_id: workspaceId,
      channel: 'alt-b',
      ...(integrationId ? { integration_id: integrationId } : {}),
    })
    .then(
      (integration) => integration.id,
      (error: unknown) => (error instanceof AppError ? error.body.error : error),
    );

it('a change made through one replica is seen by every replica at once', async () => {
  const first = await bus.request('cmd.connector.create-integration', {
    workspace_id: workspaceId,
    channel: 'alt-b',
    config: { base_url: 'http://127.0.0.1:9' },
  });
  // Both replicas now hold it in memory.
  expect([await resolve(), await resolve(), await resolve(first.id), await resolve(first.id)]).toEqual(
    Array(4).fill(first.id),
  );

  // A newer integration of the channel is the one sends without an id take, on both replicas.
  const second = await bus.request('cmd.connector.create-integration', {
    workspace_id: workspaceId,
    channel: 'alt-b',
    config: { base_url: 'http://127.0.0.1:9' },
  });
  expect([await resolve(), await resolve()]).toEqual([second.id, second.id]);

  await bus.request('cmd.connector.update-integration', {
    workspace_id: workspaceId,
    integration_id: second.id,
    status: 'disconnected',
  });
  expect([await resolve(second.id), await resolve(second.id)]).toEqual([
    errorTexts.integrationNotConnected,
    errorTexts.integrationNotConnected,
  ]);
  expect([await resolve(), await resolve()]).toEqual([first.id, first.id]);

  await bus.request('cmd.connector.update-integration', {
    workspace_id: workspaceId,
    integration_id: first.id,
    status: 'disconnected',
  });
  const none = platformTexts.noConnectedIntegration('alt-b');
  expect([await resolve(), await resolve()]).toEqual([none, none]);
});

it('never answers with another workspace’s integration, whatever a replica holds', async () => {
  const other = await bus.request('cmd.connector.create-integration', {
    workspace_id: randomUUID(),
    channel: 'alt-b',
    config: { base_url: 'http://127.0.0.1:9' },
  });
  expect(await resolve(other.id)).toBe(platformTexts.integrationNotFound);
  expect(await resolve(other.id)).toBe(platformTexts.integrationNotFound);
});
