import type { InboundMessage } from './channel-adapter.js';

type Content = Pick<InboundMessage, 'text' | 'type'>;

/** The WhatsApp message kinds we tell apart, with the field that holds their text. */
const media: ReadonlyArray<[key: string, type: InboundMessage['type'], textField: string]> = [
  ['imageMessage', 'image', 'caption'],
  ['videoMessage', 'video', 'caption'],
  ['audioMessage', 'audio', ''],
  ['documentMessage', 'document', 'caption'],
  ['locationMessage', 'location', 'name'],
];

const textOf = (value: unknown, field: string): string => {
  const text = field ? (value as Record<string, unknown> | null)?.[field] : undefined;
  return typeof text === 'string' ? text : '';
};

/**
 * What an Evolution `messages.upsert` message says. Its `prepareMessage` has already folded
 * `extendedTextMessage` into `conversation` and `documentWithCaptionMessage` into `documentMessage`;
 * the unfolded forms are read too, in case a version does not.
 */
export function messageContent(message: Record<string, unknown> | null | undefined): Content {
  if (!message) return { text: '', type: 'others' };
  if (typeof message.conversation === 'string') return { text: message.conversation, type: 'text' };
  const extended = textOf(message.extendedTextMessage, 'text');
  if (extended) return { text: extended, type: 'text' };
  for (const [key, type, field] of media) {
    if (message[key]) return { text: textOf(message[key], field), type };
  }
  return { text: '', type: 'others' };
}
