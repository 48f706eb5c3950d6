import { inboundKinds } from './inbound-kinds.js';
import { SHARED_PIN } from './shared-pin.js';

// A received message's `message` and `messageType` as Evolution API 2.3 passes them on from Baileys 7
// (WAProto's message fields; Evolution's prepareMessage folds only a top-level extendedTextMessage into
// `conversation`, so an envelope such as `ephemeralMessage` arrives as WhatsApp sent it).

/**
 * What a control names; `button_reply`, `list_reply`, `ephemeral`, `pin`, `live_location` and
 * `reaction_removed` are ours.
 */
export const baileysKinds = inboundKinds('alt-a', [
  'text',
  'ephemeral',
  'image',
  'location',
  'pin',
  'live_location',
  'button_reply',
  'list_reply',
  'reaction',
  'reaction_removed',
]);
export type BaileysKind = (typeof baileysKinds.kinds)[number];

/** `text` is what the message says: its words, a caption, a label tapped, a reaction's emoji. */
export function baileysMessage(
  kind: BaileysKind,
  text: string,
  key: { remoteJid: string },
): { message: Record<string, unknown>; messageType: string } {
  // A reaction names the message it answers: one of the business's, in the same chat.
  const reacted = { remoteJid: key.remoteJid, fromMe: true, id: '3EB0C767D26A1D5BDF3F13' };
  switch (kind) {
    case 'text':
      return { message: { conversation: text }, messageType: 'conversation' };
    case 'ephemeral':
      // A chat with disappearing messages on: the text inside WhatsApp's envelope, unfolded.
      return {
        message: { ephemeralMessage: { message: { extendedTextMessage: { text } } } },
        messageType: 'ephemeralMessage',
      };
    case 'image':
      return {
        message: { imageMessage: { caption: text, mimetype: 'image/jpeg' } },
        messageType: 'imageMessage',
      };
    case 'location':
    case 'pin':
      return {
        message: {
          locationMessage: {
            degreesLatitude: SHARED_PIN.latitude,
            degreesLongitude: SHARED_PIN.longitude,
            ...(kind === 'location' ? { name: text, address: SHARED_PIN.address } : {}),
          },
        },
        messageType: 'locationMessage',
      };
    case 'live_location':
      // A live location as Evolution posts it; whether each of its later updates comes as one too is
      // documented nowhere (each would be taken in as a message, as before they were read at all).
      return {
        message: {
          liveLocationMessage: {
            degreesLatitude: SHARED_PIN.latitude,
            degreesLongitude: SHARED_PIN.longitude,
            accuracyInMeters: 12,
            caption: text,
            sequenceNumber: String(Date.now() * 1000),
          },
        },
        messageType: 'liveLocationMessage',
      };
    case 'button_reply':
      return {
        message: {
          buttonsResponseMessage: { selectedButtonId: '1', selectedDisplayText: text, type: 'DISPLAY_TEXT' },
        },
        messageType: 'buttonsResponseMessage',
      };
    case 'list_reply':
      return {
        message: {
          listResponseMessage: {
            title: text,
            listType: 'SINGLE_SELECT',
            singleSelectReply: { selectedRowId: '1' },
          },
        },
        messageType: 'listResponseMessage',
      };
    case 'reaction':
    case 'reaction_removed':
      // Taking a reaction back sends one with an empty text.
      return {
        message: {
          reactionMessage: {
            key: reacted,
            text: kind === 'reaction' ? text : '',
            senderTimestampMs: String(Date.now()),
          },
        },
        messageType: 'reactionMessage',
      };
  }
}
