import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { Pool } from '@inbox/db';
import { AddressPolicy, OutboundGuard } from '@inbox/outbound-http';
import { createLogger, SecretBox } from '@inbox/service-kit';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { sendOnce } from '../src/handlers/send-once.js';
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
