import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type AppError, platformTexts } from '@inbox/contracts';
import type { Pool } from '@inbox/db';
import { AddressPolicy, OutboundGuard } from '@inbox/outbound-http';
import { createLogger, SecretBox } from '@inbox/service-kit';
import { waitFor } from '@inbox/testkit';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { sendOnce } from '../src/handlers/send-once.js';
import { sendText } from '../src/handlers/send-text.js';
import { WorkspaceTurns } from '../src/handlers/workspace-turns.js';
import { IntegrationStore } from '../src/store/integrations.js';
import { migratedPool } from './support.js';

let pool: Pool;
let guard: OutboundGuard;

beforeAll(async () => {
  pool = await migratedPool();
  guard = new OutboundGuard(AddressPolicy.fromSetting(''), { timeoutMs: 2_000 });
});
afterAll(async () => {
  await guard?.close();
  await pool?.end();
});

it("stores a provider's overlong message id as the digest a status callback's id gets, and records the other sends of its turn", async () => {
  const store = new IntegrationStore(pool, new SecretBox(SecretBox.generateKey()));
  const deps = {
    store,
    guard,
    logger: createLogger('provider-connector', { level: 'silent' }),
    providerTimeoutMs: 2_000,
  };
  const integrationOf = async () => {
    const workspaceId = randomUUID();
    const created = await store.create(workspaceId, {
      channel: 'alt-a',
      config: { base_url: 'https://evolution.example.com', instance: 'i', api_key: 'k' },
      accountId: randomUUID(),
    });
    return { workspaceId, integrationId: created!.integration.id, messageId: randomUUID() };
  };
  // A provider the tenant runs itself may answer any id: random, so no compression fits it in an index entry.
  const overlong = randomBytes(3_000).toString('base64');
  const hostile = await integrationOf();
  const other = await integrationOf();

  // In one turn, so that both answers are recorded by one statement.
  const [hostileAnswer, otherAnswer] = await Promise.all([
    sendOnce(deps, hostile, async () => ({ providerMessageId: overlong })),
    sendOnce(deps, other, async () => ({ providerMessageId: 'wamid.short' })),
  ]);

  const digest = `sha256:${createHash('sha256').update(overlong).digest('hex')}`;
  expect(hostileAnswer.provider_message_id).toBe(digest);
  expect(otherAnswer.provider_message_id).toBe('wamid.short');
  expect(await store.findSend(hostile.workspaceId, hostile.messageId)).toMatchObject({
    provider_message_id: digest,
  });
  expect(await store.findSend(other.workspaceId, other.messageId)).toMatchObject({
    provider_message_id: 'wamid.short',
  });
});

it("refuses a workspace's send at once while as many of its sends wait on a silent provider as it may have, and sends the others'", async () => {
  const silent = createServer(() => undefined);
  silent.listen(0, '127.0.0.1');
  await new Promise((resolve) => silent.once('listening', resolve));
  const calls = () => new Promise<number>((resolve) => silent.getConnections((_, count) => resolve(count)));
  const local = new OutboundGuard(AddressPolicy.fromSetting('127.0.0.0/8'), { timeoutMs: 5_000 });
  const store = new IntegrationStore(pool, new SecretBox(SecretBox.generateKey()));
  const deps = {
    store,
    guard: local,
    logger: createLogger('provider-connector', { level: 'silent' }),
    providerTimeoutMs: 1_500,
    sendTurns: new WorkspaceTurns(2, 0),
  };
  const integrate = async (workspaceId: string) => {
    const created = await store.create(workspaceId, {
      channel: 'alt-a',
      config: {
        base_url: `http://127.0.0.1:${(silent.address() as AddressInfo).port}`,
        instance: 'i',
        api_key: 'k',
      },
      accountId: randomUUID(),
    });
    return created!.integration.id;
  };
  const hostile = randomUUID();
  const integrationId = await integrate(hostile);
  const send = (workspaceId: string, integration_id: string, message_id = randomUUID()) =>
    sendText(deps, {
      workspace_id: workspaceId,
      integration_id,
      message_id,
      to: '+5511944440001',
      text: 'Olá',
    });
  try {
    const sentBefore = randomUUID();
    await sendOnce(deps, { workspaceId: hostile, integrationId, messageId: sentBefore }, async () => ({
      providerMessageId: 'wamid.before',
    }));
    const heldIds = [randomUUID(), randomUUID()];
    const held = heldIds.map((id) =>
      send(hostile, integrationId, id).catch((error: unknown) => error as AppError),
    );
    await waitFor(async () => (await calls()) === 2, { what: 'two sends held by the silent provider' });

    const refusedId = randomUUID();
    await expect(send(hostile, integrationId, refusedId)).rejects.toMatchObject({
      status: 503,
      body: { error: platformTexts.providerSendsBusy('alt-a', 2) },
    });
    expect(await store.findSend(hostile, refusedId)).toBeUndefined();
    expect(await calls()).toBe(2);
    // Repeats of messages tried before get what is known of them, not "nothing was sent".
    expect((await send(hostile, integrationId, sentBefore)).provider_message_id).toBe('wamid.before');
    await expect(send(hostile, integrationId, heldIds[0])).rejects.toMatchObject({
      status: 409,
      body: { error: platformTexts.sendOutcomeUnknown(heldIds[0]!) },
    });

    // Another workspace's sends go through the same process meanwhile.
    const other = randomUUID();
    const otherIntegration = await integrate(other);
    const answered = await sendOnce(
      deps,
      { workspaceId: other, integrationId: otherIntegration, messageId: randomUUID() },
      async () => ({ providerMessageId: 'wamid.other' }),
    );
    expect(answered.provider_message_id).toBe('wamid.other');

    // The held ones end at the provider timeout (504, outcome unknown), and the workspace's turns are free.
    expect((await Promise.all(held)).map((error) => (error as AppError).status)).toEqual([504, 504]);
    const after = await sendOnce(
      deps,
      { workspaceId: hostile, integrationId, messageId: randomUUID() },
      async () => ({ providerMessageId: 'wamid.after' }),
    );
    expect(after.provider_message_id).toBe('wamid.after');
  } finally {
    silent.closeAllConnections();
    silent.close();
    await local.close();
  }
});
