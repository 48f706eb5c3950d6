import { inboundKinds } from './inbound-kinds.js';
import { SHARED_PIN } from './shared-pin.js';

// A ReceivedCallback's content fields, one per kind, as Z-API's on-message-received examples give them
// (github.com/Z-API/z-api-docs, docs/webhooks/on-message-received.md).

/** What a control names; `pin`, `button_reply`, `list_reply` and `reaction_removed` are ours. */
export const zapiKinds = inboundKinds('alt-b', [
  'text',
  'image',
  'location',
  'pin',
  'button_reply',
  'list_reply',
  'reaction',
  'reaction_removed',
]);
export type ZapiKind = (typeof zapiKinds.kinds)[number];

/** `text` is what the message says: its words, a caption, a label tapped, a reaction's emoji. */
export function zapiContent(kind: ZapiKind, text: string, from: string): Record<string, unknown> {
  // A tap or a reaction answers one of the business's messages.
  const answered = 'A20DA9C0183A2D35A260F53F5D2B9244';
  switch (kind) {
    case 'text':
      return { text: { message: text } };
    case 'image':
      return {
        image: {
          mimeType: 'image/jpeg',
          imageUrl: 'https://',
          thumbnailUrl: 'https://',
          caption: text,
          width: 600,
          height: 315,
          viewOnce: false,
        },
      };
    case 'location':
    case 'pin':
      // The docs' location has no name: what a shared place says is its address ("" for a bare pin).
      return {
        location: {
          longitude: SHARED_PIN.longitude,
          latitude: SHARED_PIN.latitude,
          address: kind === 'location' ? `${text}, ${SHARED_PIN.address}` : '',
          url: '',
        },
      };
    case 'button_reply':
      return {
        referenceMessageId: answered,
        forwarded: false,
        buttonsResponseMessage: { buttonId: '1', message: text },
      };
    case 'list_reply':
      return {
        referenceMessageId: answered,
        forwarded: false,
        listResponseMessage: { message: 'Descrição da opção', title: text, selectedRowId: '1' },
      };
    case 'reaction':
    case 'reaction_removed':
      // The docs show a reaction; one taken back is assumed to carry an empty value, as WhatsApp's does.
      return {
        reaction: {
          value: kind === 'reaction' ? text : '',
          time: Date.now(),
          reactionBy: from,
          referencedMessage: { messageId: answered, fromMe: true, phone: from, participant: null },
        },
      };
  }
}
