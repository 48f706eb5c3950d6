import type { IntegrationChannel } from '@inbox/contracts';
import { altAAdapter } from './alt-a.js';
import type { ChannelAdapter } from './channel-adapter.js';

export { type ChannelAdapter, type OutboundText, ProviderError } from './channel-adapter.js';

const adapters: Partial<Record<IntegrationChannel, ChannelAdapter>> = {
  'alt-a': altAAdapter as unknown as ChannelAdapter,
};

export function adapterFor(channel: IntegrationChannel): ChannelAdapter | undefined {
  return adapters[channel];
}
