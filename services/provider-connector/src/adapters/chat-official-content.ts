import type { InboundMessage } from './channel-adapter.js';
import { locationText, type SharedPlace } from './location-text.js';
import { textAt } from './text-at.js';

type Content = Pick<InboundMessage, 'text' | 'type'>;

/**
 * What a Cloud API `messages[]` entry says, by its `type`, as Meta's messages webhook reference gives the
 * shapes: a media message's words are its caption; a tap on a template's quick-reply button (`button`) or
 * on an interactive message's reply button or list row (`interactive`) is the customer answering with
 * that label, so it is taken as their text. Undefined for what is no message of the customer's: a
 * `system` notice (the user changed their number) and a reaction taken back (no `emoji`).
 */
export function cloudMessageContent(message: Record<string, unknown>): Content | undefined {
  switch (message.type) {
    case 'text':
      return { text: textAt(message, 'text', 'body'), type: 'text' };
    case 'image':
    case 'video':
    case 'document':
      return { text: textAt(message, message.type, 'caption'), type: message.type };
    case 'audio':
      return { text: '', type: 'audio' };
    case 'location':
      return { text: locationText((message.location ?? {}) as SharedPlace), type: 'location' };
    case 'button':
      return { text: textAt(message, 'button', 'text'), type: 'text' };
    case 'interactive': {
      const title =
        textAt(message, 'interactive', 'button_reply', 'title') ||
        textAt(message, 'interactive', 'list_reply', 'title');
      return title ? { text: title, type: 'text' } : { text: '', type: 'others' };
    }
    case 'reaction': {
      const emoji = textAt(message, 'reaction', 'emoji');
      return emoji ? { text: emoji, type: 'others' } : undefined;
    }
    case 'system':
      return undefined;
    default:
      // Stickers, contacts, orders, and what Meta itself calls `unsupported`: kept, with nothing to read.
      return { text: '', type: 'others' };
  }
}
