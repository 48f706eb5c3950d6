import type { z } from 'zod';
import { type ChannelDescriptor, channelDescriptors } from './channel-descriptors.js';

export {
  type ChannelDescriptor,
  channelDescriptors,
  readAllowedOrigins,
  type StoredConfig,
} from './channel-descriptors.js';

// Everything here is derived from the descriptor table when this module loads, so a channel added to
// the table (or, in a test, to a mocked table) appears in every list, enum and text built from them.

type Descriptors = typeof channelDescriptors;
export type IntegrationChannel = keyof Descriptors;
export type Provider = Descriptors[IntegrationChannel]['provider'];
/** A channel's config as its descriptor's schema gives it back. */
export type ChannelConfig<K extends IntegrationChannel> = z.output<Descriptors[K]['config']>;

type Flag = {
  [F in keyof ChannelDescriptor]-?: ChannelDescriptor[F] extends boolean ? F : never;
}[keyof ChannelDescriptor];
/** The channels whose descriptor sets `flag`. */
type ChannelsWith<F extends Flag> = {
  [K in IntegrationChannel]: Descriptors[K][F] extends true ? K : never;
}[IntegrationChannel];

export function isIntegrationChannel(value: string): value is IntegrationChannel {
  return Object.hasOwn(channelDescriptors, value);
}

const typedDescriptors: { readonly [K in IntegrationChannel]: ChannelDescriptor<ChannelConfig<K>> } =
  channelDescriptors;

/** A channel's descriptor, typed with its own config even where the channel is a type parameter. */
export function descriptorOf<K extends IntegrationChannel>(channel: K): ChannelDescriptor<ChannelConfig<K>> {
  return typedDescriptors[channel];
}

export const integrationChannels: readonly IntegrationChannel[] =
  Object.keys(channelDescriptors).filter(isIntegrationChannel);

const channelsWith = <F extends Flag>(flag: F): readonly ChannelsWith<F>[] =>
  integrationChannels.filter((channel): channel is ChannelsWith<F> => channelDescriptors[channel][flag]);

export const sendMessageChannels = channelsWith('sendMessage');
export type SendMessageChannel = ChannelsWith<'sendMessage'>;
export const externalSendChannels = channelsWith('externalSend');
export const inboundChannels = channelsWith('receivesInbound');
export const windowChannels = channelsWith('hasWindow');
export const templateChannels = channelsWith('hasTemplates');
export type TemplateChannel = ChannelsWith<'hasTemplates'>;

/** The provider value webhooks show: the two alternative chat providers both report `chat`. */
export function providerOf(channel: IntegrationChannel): Provider {
  return channelDescriptors[channel].provider;
}

export const providers: readonly Provider[] = [...new Set(integrationChannels.map(providerOf))];

/**
 * The longest provider user id taken in or sent to, on channels that name users without a number. Meta's
 * business-scoped user ids are a country prefix and up to 128 characters after it; a longer id is refused,
 * never cut: a cut id names another user, or none.
 */
export const providerUserIdMaxChars = 256;

/**
 * What the channels behind a provider value allow of a reply into one of their conversations (the two
 * alternative chat providers share `chat`, and agree on all of it): external send, a reply from the
 * panel, and a window that nothing reopens (no templates), which is then checked before the provider is
 * called. Undefined for a value no channel has.
 */
export function replyRules(
  provider: string,
): { externalSend: boolean; panelReply: boolean; windowWithoutTemplates: boolean } | undefined {
  const descriptors = integrationChannels
    .map((channel): ChannelDescriptor => channelDescriptors[channel])
    .filter((descriptor) => descriptor.provider === provider);
  if (descriptors.length === 0) return undefined;
  return {
    externalSend: descriptors.every((d) => d.externalSend),
    panelReply: descriptors.every((d) => d.externalSend || d.panelReply === true),
    windowWithoutTemplates: descriptors.some((d) => d.hasWindow && !d.hasTemplates),
  };
}
