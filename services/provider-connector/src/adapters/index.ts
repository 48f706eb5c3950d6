import {
  type ChannelConfig,
  descriptorOf,
  type IntegrationChannel,
  integrationChannels,
  type StoredConfig,
} from '@inbox/contracts';
import { altAAdapter } from './alt-a.js';
import { altBAdapter } from './alt-b.js';
import { botAdapter } from './bot.js';
import type { ChannelAdapter, ProviderOperations } from './channel-adapter.js';
import { chatOfficialAdapter } from './chat-official.js';
import { livechatAdapter } from './livechat.js';
import { marketAdapter } from './market.js';
import { photoAdapter } from './photo.js';
import { socialAdapter } from './social.js';

export {
  type ChannelAdapter,
  type InboundBatch,
  InboundRejected,
  type ManualRegistration,
  type NotifiedResource,
  type OutboundText,
  type ProviderCall,
  ProviderError,
  type ProviderRefusal,
} from './channel-adapter.js';

/** A channel whose adapter is not written yet: the connector answers that it is not supported. */
const notSupportedYet = 'not supported yet';

/** Every channel of the descriptor table has its entry: a channel added there without one does not compile. */
const adapters: { readonly [K in IntegrationChannel]: ChannelAdapter<K> | typeof notSupportedYet } = {
  'chat-official': chatOfficialAdapter,
  'alt-a': altAAdapter,
  'alt-b': altBAdapter,
  bot: botAdapter,
  photo: photoAdapter,
  social: socialAdapter,
  livechat: livechatAdapter,
  market: marketAdapter,
};

/** An adapter as the handlers use it: on the config as stored, which it reads with its channel's schema. */
export type StoredConfigAdapter = ProviderOperations<StoredConfig>;

function onStoredConfig<K extends IntegrationChannel>(channel: K): StoredConfigAdapter | undefined {
  const adapter: ChannelAdapter<K> | typeof notSupportedYet | undefined = adapters[channel];
  // Undefined: a channel only a descriptor names (a test's), which has no adapter either.
  if (adapter === undefined || adapter === notSupportedYet) return undefined;
  // The stored config passed this schema when the integration was created; reading it again types it.
  const read = (config: StoredConfig): ChannelConfig<K> => descriptorOf(channel).config.parse(config);
  const {
    templates,
    answerHandshake,
    callbackUrlRules,
    callbackPathEvents,
    resolveInbound,
    missedCallbacks,
    messagesSince,
    callbackSubscribed,
    oneCallbackPerAccount,
    refusedRegistrationDropsCallback,
    callbackBodyBytes,
    callbackIntake,
  } = adapter;
  return {
    sendText: (config, message, call) => adapter.sendText(read(config), message, call),
    registerInbound: (config, callbackUrl, call) => adapter.registerInbound(read(config), callbackUrl, call),
    readInbound: (config, request) => adapter.readInbound(read(config), request),
    templates: templates && {
      list: (config, call) => templates.list(read(config), call),
      send: (config, message, call) => templates.send(read(config), message, call),
    },
    answerHandshake: answerHandshake && ((config, query) => answerHandshake(read(config), query)),
    resolveInbound:
      resolveInbound && ((config, notified, call) => resolveInbound(read(config), notified, call)),
    missedCallbacks: missedCallbacks && ((config, call) => missedCallbacks(read(config), call)),
    messagesSince: messagesSince && ((config, call, since) => messagesSince(read(config), call, since)),
    callbackSubscribed: callbackSubscribed && ((config, call) => callbackSubscribed(read(config), call)),
    ...(callbackUrlRules ? { callbackUrlRules } : {}),
    ...(callbackPathEvents ? { callbackPathEvents } : {}),
    ...(oneCallbackPerAccount ? { oneCallbackPerAccount } : {}),
    ...(refusedRegistrationDropsCallback ? { refusedRegistrationDropsCallback } : {}),
    ...(callbackBodyBytes ? { callbackBodyBytes } : {}),
    ...(callbackIntake ? { callbackIntake } : {}),
  };
}

/** Each channel of the descriptor table and its adapter; absent where the adapter is not written yet. */
export const adapterRegistry: ReadonlyMap<IntegrationChannel, StoredConfigAdapter | undefined> = new Map(
  integrationChannels.map((channel) => [channel, onStoredConfig(channel)]),
);

export function adapterFor(channel: IntegrationChannel): StoredConfigAdapter | undefined {
  return adapterRegistry.get(channel);
}
