import { channelDescriptors, type integrationChannels } from '@inbox/contracts/web';
import { z } from 'zod';

export type Channel = (typeof integrationChannels)[number];

export interface ConfigField {
  key: string;
  required: boolean;
  /** What the API takes when the field is left out. */
  defaultValue?: string;
  kind: 'url' | 'secret' | 'text';
}

// Keys that name a credential are typed as passwords, so they are not shown over a shoulder.
const credential = /token|secret|key|password/i;

/**
 * The fields of a channel's integration form, read from the config schema of its descriptor (in
 * @inbox/contracts, as the connector checks it): a new key or channel there is a new field here.
 */
export function configFields(channel: Channel): ConfigField[] {
  const schema = z.toJSONSchema(channelDescriptors[channel].config, {
    io: 'input',
    unrepresentable: 'any',
  }) as {
    properties?: Record<string, { format?: string; default?: unknown }>;
    required?: string[];
  };
  return Object.entries(schema.properties ?? {}).map(([key, property]) => ({
    key,
    required: schema.required?.includes(key) ?? false,
    defaultValue: typeof property.default === 'string' ? property.default : undefined,
    kind: property.format === 'uri' ? 'url' : credential.test(key) ? 'secret' : 'text',
  }));
}

/** What the channel can do, as its descriptor says: shown beside the form and used by the inbox. */
export function capabilities(channel: string) {
  const descriptor = (channelDescriptors as Record<string, (typeof channelDescriptors)[Channel] | undefined>)[
    channel
  ];
  return {
    sendMessage: descriptor?.sendMessage ?? false,
    externalSend: descriptor?.externalSend ?? false,
    receivesInbound: descriptor?.receivesInbound ?? false,
    hasTemplates: descriptor?.hasTemplates ?? false,
  };
}
