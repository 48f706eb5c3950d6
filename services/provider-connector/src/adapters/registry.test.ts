import { descriptorOf, type IntegrationChannel, integrationChannels } from '@inbox/contracts';
import { afterEach, describe, expect, it } from 'vitest';
import {
  addFakeChannel,
  fakeChannel,
  removeFakeChannel,
} from '../../../../libs/contracts/test/fake-channel.js';
import type { CreateIntegrationDeps } from '../handlers/integrations.js';
import { adapterFor, adapterRegistry } from './index.js';

/** Creating an integration of the channel, as the handler imported now (after any mock) answers it. */
async function creating(channel: IntegrationChannel) {
  const { createIntegration } = await import('../handlers/integrations.js');
  // A channel without an adapter is refused before anything is stored, so no dependency is needed.
  return createIntegration({} as CreateIntegrationDeps, {
    workspace_id: '00000000-0000-4000-8000-000000000000',
    channel,
    config: {},
  });
}

const notSupported = (channel: string) => ({
  status: 400,
  body: { error: `O canal "${channel}" ainda não é suportado por este conector` },
});

describe('the adapter registry', () => {
  afterEach(removeFakeChannel);

  it('has an entry per channel of the table; templates exactly where the descriptor has them', () => {
    expect([...adapterRegistry.keys()]).toEqual(integrationChannels);
    for (const channel of integrationChannels) {
      expect(Boolean(adapterFor(channel)?.templates)).toBe(descriptorOf(channel).hasTemplates);
    }
  });

  it('takes in a channel added to the descriptor table, as not supported until it has an adapter', async () => {
    addFakeChannel();
    const registry = await import('./index.js');
    // The mocked table's channel, which the types (read from the real table) do not know.
    const fake = fakeChannel as IntegrationChannel;
    expect(registry.adapterRegistry.has(fake)).toBe(true);
    expect(registry.adapterFor(fake)).toBeUndefined();
    await expect(creating(fake)).rejects.toMatchObject(notSupported(fakeChannel));
  });
});
