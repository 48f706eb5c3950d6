export const sendMessageChannels = ['chat-official', 'alt-a', 'alt-b'] as const;
export type SendMessageChannel = (typeof sendMessageChannels)[number];

export const integrationChannels = [
  'chat-official',
  'alt-a',
  'alt-b',
  'bot',
  'photo',
  'social',
  'livechat',
  'market',
] as const;
export type IntegrationChannel = (typeof integrationChannels)[number];

export const providers = ['chat-official', 'chat', 'bot', 'photo', 'social', 'livechat', 'market'] as const;
export type Provider = (typeof providers)[number];

/** The provider value webhooks show: the two alternative chat providers both report `chat`. */
export function providerOf(channel: IntegrationChannel): Provider {
  return channel === 'alt-a' || channel === 'alt-b' ? 'chat' : channel;
}
