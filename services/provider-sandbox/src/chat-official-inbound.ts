import { randomInt } from 'node:crypto';
import { parsePhoneNumberFromString } from 'libphonenumber-js';
import { newWamid } from './chat-official-state.js';
import { inboundKinds } from './inbound-kinds.js';
import { SHARED_PIN } from './shared-pin.js';

// A customer's message as the `messages` webhook field carries it, for each kind a control can ask for,
// field for field as Meta's messages webhook reference gives them
// (developers.facebook.com/documentation/business-messaging/whatsapp/webhooks/reference/messages/).

/** What a control names; `pin`, `button_reply`, `list_reply` and `reaction_removed` are the sandbox's names. */
export const cloudKinds = inboundKinds('chat-official', [
  'text',
  'image',
  'video',
  'document',
  'audio',
  'sticker',
  'location',
  'pin',
  'button',
  'button_reply',
  'list_reply',
  'reaction',
  'reaction_removed',
  'system',
  'unsupported',
]);
export type InboundKind = (typeof cloudKinds.kinds)[number];

const mediaId = () => String(randomInt(100_000_000_000, 999_999_999_999));
const sha256 = () => Buffer.from(newWamid()).toString('base64').slice(0, 44);

/**
 * The kind's own fields: `text` is what the message says where it says anything (the body, a caption, a
 * button's label, a reaction's emoji, a system notice); an audio, a sticker or an unsupported message
 * carries none.
 */
export function messageFields(kind: InboundKind, text: string, from: string): Record<string, unknown> {
  // A button tap or a reaction answers one of the business's messages; Meta names it in `context`.
  const answered = { from: '15550000000', id: newWamid() };
  switch (kind) {
    case 'text':
      return { type: 'text', text: { body: text } };
    case 'image':
      return {
        type: 'image',
        image: { caption: text, mime_type: 'image/jpeg', sha256: sha256(), id: mediaId() },
      };
    case 'video':
      return {
        type: 'video',
        video: { caption: text, mime_type: 'video/mp4', sha256: sha256(), id: mediaId() },
      };
    case 'document':
      return {
        type: 'document',
        document: {
          caption: text,
          filename: 'document.pdf',
          mime_type: 'application/pdf',
          sha256: sha256(),
          id: mediaId(),
        },
      };
    case 'audio':
      return {
        type: 'audio',
        audio: { mime_type: 'audio/ogg; codecs=opus', sha256: sha256(), id: mediaId(), voice: true },
      };
    case 'sticker':
      return {
        type: 'sticker',
        sticker: { mime_type: 'image/webp', sha256: sha256(), id: mediaId(), animated: false },
      };
    case 'location':
    case 'pin':
      return {
        type: 'location',
        location: {
          latitude: SHARED_PIN.latitude,
          longitude: SHARED_PIN.longitude,
          ...(kind === 'location' ? { name: text, address: SHARED_PIN.address } : {}),
        },
      };
    case 'button':
      return { type: 'button', context: answered, button: { payload: text.toUpperCase(), text } };
    case 'button_reply':
      return {
        type: 'interactive',
        context: answered,
        interactive: { type: 'button_reply', button_reply: { id: 'button-1', title: text } },
      };
    case 'list_reply':
      return {
        type: 'interactive',
        context: answered,
        interactive: { type: 'list_reply', list_reply: { id: 'row-1', title: text, description: '' } },
      };
    case 'reaction':
      return { type: 'reaction', reaction: { message_id: answered.id, emoji: text } };
    case 'reaction_removed':
      // "When an end user removes a reaction emoji, WhatsApp sends a webhook without the emoji field."
      return { type: 'reaction', reaction: { message_id: answered.id } };
    case 'system':
      return { type: 'system', system: { body: text, wa_id: from, type: 'user_changed_number' } };
    case 'unsupported':
      return {
        type: 'unsupported',
        errors: [
          {
            code: 131051,
            title: 'Message type unknown',
            message: 'Message type unknown',
            error_data: { details: 'Message type is currently not supported.' },
          },
        ],
      };
  }
}

/**
 * Business-scoped user ids: one per (business, user), `<ISO country>.<digits>` (e.g. `BR.1349120865530274191`),
 * sent in every messages webhook since April 2026, whether or not the user has a username.
 */
export class BusinessScopedIds {
  readonly #byUser = new Map<string, string>();
  readonly #numbers = new Map<string, string>();

  of(business: string, number: string): string {
    const key = `${business}:${number}`;
    let id = this.#byUser.get(key);
    if (!id) {
      const country = parsePhoneNumberFromString(`+${number}`)?.country ?? 'US';
      id = `${country}.${randomInt(100_000_000, 999_999_999)}${randomInt(1_000_000_000, 9_999_999_999)}`;
      this.#byUser.set(key, id);
      this.#numbers.set(`${business}:${id}`, number);
    }
    return id;
  }

  /** The number behind a business's BSUID; undefined for one it never issued. */
  numberOf(business: string, id: string): string | undefined {
    return this.#numbers.get(`${business}:${id}`);
  }

  clear(): void {
    this.#byUser.clear();
    this.#numbers.clear();
  }
}
