import type { IntegrationChannel } from '@inbox/contracts';
import { altAAdapter } from './alt-a.js';
import { altBAdapter } from './alt-b.js';
import type { ChannelAdapter } from './channel-adapter.js';
import { chatOfficialAdapter } from './chat-official.js';

export {
  type ChannelAdapter,
  type InboundBatch,
  InboundRejected,
  type OutboundText,
  type ProviderCall,
  ProviderError,
} from './channel-adapter.js';

const adapters: Partial<Record<IntegrationChannel, ChannelAdapter>> = {
  'chat-official': chatOfficialAdapter as unknown as ChannelAdapter,
  'alt-a': altAAdapter as unknown as ChannelAdapter,
  'alt-b': altBAdapter as unknown as ChannelAdapter,
};

export function adapterFor(channel: IntegrationChannel): ChannelAdapter | undefined {
  return adapters[channel];
}
