import type { InboundMessage } from './channel-adapter.js';
import { locationText } from './location-text.js';
import { textAt, valueAt } from './text-at.js';

type Content = Pick<InboundMessage, 'text' | 'type'>;

/** The WhatsApp message kinds we tell apart, with the field that holds their text. */
const media: ReadonlyArray<[key: string, type: InboundMessage['type'], textField: string]> = [
  ['imageMessage', 'image', 'caption'],
  ['videoMessage', 'video', 'caption'],
  ['audioMessage', 'audio', ''],
  ['documentMessage', 'document', 'caption'],
];

/**
 * Envelopes WhatsApp puts around a message in a chat with disappearing messages or a view-once one.
 * Evolution passes them on as Baileys decoded them (only its Chatwoot integration unwraps them), as
 * Baileys' own `normalizeMessageContent` lists them.
 */
const envelopes = [
  'ephemeralMessage',
  'viewOnceMessage',
  'viewOnceMessageV2',
  'viewOnceMessageV2Extension',
  'documentWithCaptionMessage',
] as const;

type Message = Record<string, unknown>;

function unwrapped(message: Message): Message {
  let current = message;
  // Baileys looks five envelopes deep.
  for (let depth = 0; depth < 5; depth++) {
    const inner = envelopes
      .map((key) => (current[key] as { message?: unknown } | null | undefined)?.message)
      .find((found): found is Message => typeof found === 'object' && found !== null);
    if (!inner) return current;
    current = inner;
  }
  return current;
}

/**
 * What an Evolution `messages.upsert` message says. Its `prepareMessage` has already folded
 * `extendedTextMessage` into `conversation` and `documentWithCaptionMessage` into `documentMessage`;
 * the unfolded forms are read too, in case a version does not. A tap on a button or a list row is the
 * contact answering with its label; a reaction is its emoji. Undefined for no message of the contact's:
 * a reaction taken back (its text empty) and a protocol message (a deletion or an edit).
 */
export function messageContent(message: Message | null | undefined): Content | undefined {
  if (!message) return { text: '', type: 'others' };
  const inner = unwrapped(message);
  if (typeof inner.conversation === 'string') return { text: inner.conversation, type: 'text' };
  const extended = textAt(inner.extendedTextMessage, 'text');
  if (extended) return { text: extended, type: 'text' };
  for (const [key, type, field] of media) {
    if (inner[key]) return { text: field ? textAt(inner[key], field) : '', type };
  }
  // A live location reads as where it was when Evolution posted it, its caption the words.
  const pin = inner.locationMessage || inner.liveLocationMessage;
  if (pin) {
    const place = {
      name: textAt(pin, 'name') || textAt(pin, 'caption'),
      address: valueAt(pin, 'address'),
      latitude: valueAt(pin, 'degreesLatitude'),
      longitude: valueAt(pin, 'degreesLongitude'),
    };
    return { text: locationText(place), type: 'location' };
  }
  const label =
    textAt(inner.buttonsResponseMessage, 'selectedDisplayText') ||
    textAt(inner.templateButtonReplyMessage, 'selectedDisplayText') ||
    textAt(inner.listResponseMessage, 'title');
  if (label) return { text: label, type: 'text' };
  if (inner.reactionMessage) {
    const emoji = textAt(inner.reactionMessage, 'text');
    return emoji ? { text: emoji, type: 'others' } : undefined;
  }
  if (inner.protocolMessage) return undefined;
  return { text: '', type: 'others' };
}
