import { setTimeout as sleep } from 'node:timers/promises';
import { AppError, type ChannelConfig, codePointLength, platformTexts } from '@inbox/contracts';
import { sameSecret } from '@inbox/service-kit';
import { z } from 'zod';
import {
  type ChannelAdapter,
  type InboundBatch,
  type InboundMessage,
  InboundRejected,
  type ProviderCall,
  ProviderError,
  type ProviderRefusal,
} from './channel-adapter.js';
import { callProvider, headerValue, joinUrl, type ProviderAnswer } from './http.js';
import { locationText, pointOf } from './location-text.js';

// Facts about the Telegram Bot API below are from its reference (core.telegram.org/bots/api: "Making
// requests", setWebhook, sendMessage, Update, Message, User, Chat, ResponseParameters) and the types of
// grammY (@grammyjs/types), a client that follows it field for field.

type BotConfig = ChannelConfig<'bot'>;

/** The header Telegram sends the webhook's `secret_token` in, on every update it posts. */
export const BOT_SECRET_HEADER = 'x-telegram-bot-api-secret-token';

/**
 * sendMessage's limit: "Text of the message to be sent, 1-4096 characters after entities parsing",
 * characters being code points: the Bot API server refuses a bot's text whose `utf8_length` passes the
 * limit (tdlib, td/telegram/MessageContent.cpp), so an emoji outside the BMP counts once, as the public
 * API counts it, not twice as a JavaScript string's length would.
 */
export const BOT_TEXT_LIMIT = 4096;

/**
 * The Bot API server takes a bot's setWebhook with a URL once a second, answering any other within that
 * second "Too Many Requests: retry after 1" before looking at it (tdlib/telegram-bot-api, Client.cpp,
 * `process_set_webhook_query`): an integration of the bot created or connected again just after another
 * registration waits that second out rather than fail.
 */
const SET_WEBHOOK_WAIT_SECONDS = 2;

/** Only new messages: edits, channel posts, callback queries and the rest are nothing we keep. */
const ALLOWED_UPDATES = ['message'];

/** Every answer: `{ ok: true, result }`, or `{ ok: false, error_code, description, parameters? }`. */
const Answer = z.object({
  ok: z.boolean(),
  result: z.unknown().optional(),
  error_code: z.number().optional(),
  description: z.string().optional(),
  parameters: z.object({ retry_after: z.number().optional() }).partial().optional(),
});

const SentMessage = z.object({ message_id: z.number().int(), chat: z.object({ id: z.number().int() }) });

const User = z.object({
  id: z.number().int(),
  is_bot: z.boolean().optional(),
  first_name: z.string(),
  last_name: z.string().optional(),
  username: z.string().optional(),
});

const Message = z.object({
  message_id: z.number().int(),
  from: User.optional(),
  chat: z.object({ id: z.number().int(), type: z.string() }),
  date: z.number().int(),
  text: z.string().optional(),
  caption: z.string().optional(),
  photo: z.array(z.unknown()).optional(),
  video: z.unknown().optional(),
  voice: z.unknown().optional(),
  audio: z.unknown().optional(),
  document: z.object({ file_name: z.string().optional() }).optional(),
  location: z.unknown().optional(),
  // A GIF, sent with `document` set too "for backward compatibility" (Bot API, Message).
  animation: z.unknown().optional(),
  video_note: z.unknown().optional(),
  sticker: z.object({ emoji: z.string().optional() }).optional(),
  contact: z
    .object({ phone_number: z.string(), first_name: z.string().optional(), last_name: z.string().optional() })
    .optional(),
  poll: z.object({ question: z.string() }).optional(),
  dice: z.object({ emoji: z.string() }).optional(),
  venue: z
    .object({ title: z.string(), address: z.unknown().optional(), location: z.unknown().optional() })
    .optional(),
});
type TelegramMessage = z.infer<typeof Message>;

const Update = z.object({ update_id: z.number().int(), message: Message.optional() });

const empty = (): InboundBatch => ({ messages: [], statuses: [] });

/** `chat_id:message_id`: a message id is only unique within its chat. */
export const botMessageId = (chatId: number | string, messageId: number) => `${chatId}:${messageId}`;

function methodUrl(config: BotConfig, method: string): URL {
  // The token goes in the path as Telegram wants it (`/bot<token>/METHOD`); the descriptor holds it to
  // `<digits>:<[A-Za-z0-9_-]>`, which cannot leave the path segment.
  // `./` keeps `bot<id>:` from reading as a URL scheme.
  return joinUrl(config.base_url, `./bot${config.bot_token}/${method}`);
}

/**
 * The Bot API's refusals of a chat the bot cannot write to, as the server words them
 * (tdlib/telegram-bot-api, telegram-bot-api/Client.cpp) and bots in the wild handle them: a user who
 * blocked the bot, a deleted account, and a user who never started the bot (a bot writes first to no
 * one), refused as a chat the bot does not have or, when it knows the user from elsewhere, as a
 * conversation it may not start.
 */
const UNREACHABLE = [
  { code: 403, description: /bot was blocked by the user/i },
  { code: 403, description: /user is deactivated/i },
  { code: 403, description: /bot can't initiate conversation with a user/i },
  { code: 400, description: /chat not found/i },
];

/**
 * A refusal in words. 401 is a token Telegram does not know (revoked with BotFather, or mistyped); a
 * recipient the bot cannot reach (`UNREACHABLE`) is said so; 429 is Telegram's flood control, which says
 * how long to wait in `parameters.retry_after`; setWebhook's 400 is a callback URL or secret Telegram will not take
 * (`bad webhook: …`: not https, another port, a name it cannot resolve; or an invalid URL, a secret too
 * long or of other characters).
 */
function failure(method: string, answer: ProviderAnswer): ProviderError {
  const parsed = Answer.safeParse(answer.body);
  const code = parsed.success ? (parsed.data.error_code ?? answer.status) : answer.status;
  const description = parsed.success ? parsed.data.description : undefined;
  const said = description ? `: ${description}` : '';
  const retryAfter = parsed.success ? parsed.data.parameters?.retry_after : undefined;
  let refusal: ProviderRefusal | undefined;
  let text = `bot answered ${code} to ${method}${said}`;
  if (code === 401) {
    refusal = 'credentials_rejected';
    text = `bot: Telegram does not know the bot token (${method} answered 401${said})`;
  } else if (code === 429) {
    refusal = 'rate_limited';
    text = `bot: Telegram is rate limiting the bot, retry after ${retryAfter ?? '?'} s (${method} answered 429${said})`;
  } else if (method === 'setWebhook' && code === 400) {
    refusal = 'callback_refused';
  } else if (UNREACHABLE.some((known) => known.code === code && known.description.test(description ?? ''))) {
    refusal = 'recipient_unreachable';
    text = `bot: the recipient cannot get the bot's messages (${method} answered ${code}${said})`;
  }
  return new ProviderError(text, answer.status, code, refusal ? { refusal } : undefined);
}

/**
 * One Bot API call. With `waitOnceUpTo`, a flood-control answer asking to wait that many seconds or fewer
 * is waited out once, within the call's deadline, and the call made again.
 */
async function callMethod(
  config: BotConfig,
  method: string,
  body: unknown,
  call: ProviderCall,
  waitOnceUpTo = 0,
): Promise<unknown> {
  const answer = await callProvider(call, 'bot', methodUrl(config, method), {
    method: 'POST',
    headers: {},
    body,
  });
  const parsed = Answer.safeParse(answer.body);
  if (answer.ok && parsed.success && parsed.data.ok) return parsed.data.result;
  const retryAfter = parsed.success ? parsed.data.parameters?.retry_after : undefined;
  if (answer.status === 429 && retryAfter !== undefined && retryAfter > 0 && retryAfter <= waitOnceUpTo) {
    await sleep(retryAfter * 1_000, undefined, { signal: call.signal });
    return callMethod(config, method, body, call);
  }
  throw failure(method, answer);
}

/**
 * What a message says. A sticker, a shared contact, a poll or a die is something the person sent, in the
 * words it carries (its emoji, the contact's name and number, the question), as the WhatsApp channels'
 * stickers and contacts are; a service message (a member joined, a pinned message...) is not.
 */
function content(message: TelegramMessage): Pick<InboundMessage, 'text' | 'type'> | undefined {
  if (message.text !== undefined) return { text: message.text, type: 'text' };
  const caption = message.caption ?? '';
  if (message.photo) return { text: caption, type: 'image' };
  if (message.video || message.animation || message.video_note) return { text: caption, type: 'video' };
  if (message.voice || message.audio) return { text: caption, type: 'audio' };
  if (message.document) return { text: caption || (message.document.file_name ?? ''), type: 'document' };
  if (message.venue) {
    const { title, address, location } = message.venue;
    return { text: locationText({ ...pointOf(location), name: title, address }), type: 'location' };
  }
  if (message.location) return { text: locationText(pointOf(message.location)), type: 'location' };
  if (message.sticker) return { text: message.sticker.emoji ?? '', type: 'others' };
  if (message.contact) {
    const { first_name, last_name, phone_number } = message.contact;
    return { text: [first_name, last_name, phone_number].filter(Boolean).join(' '), type: 'others' };
  }
  if (message.poll) return { text: message.poll.question, type: 'others' };
  if (message.dice) return { text: message.dice.emoji, type: 'others' };
  return undefined;
}

/**
 * The part of a text Telegram measures against its limit: it turns control characters into spaces, drops
 * CR, U+2028-U+202E and three combining marks, and trims spaces and newlines (only those) from both ends
 * before counting (tdlib's clean_input_string and fix_formatted_text). So 4,096 characters and a final
 * newline are not too long. Written from tdlib's source, apart from the sandbox's emulation on purpose.
 */
function measuredByTelegram(text: string): string {
  return (
    text
      // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what Telegram replaces.
      .replace(/[\u0000-\u0009\u000b\u000c\u000e-\u001f]/g, ' ')
      .replace(/[\r\u2028-\u202e]|\u030a|\u0333|\u033f/g, '')
      .replace(/^[ \n]+|[ \n]+$/g, '')
  );
}

/** Telegram gives a first name always, a last name and a username only when the user set them. */
function nameOf(user: z.infer<typeof User>): string | null {
  const full = [user.first_name, user.last_name].filter(Boolean).join(' ').trim();
  return full || user.username || null;
}

/** bot speaks the Telegram Bot API: the token in the path, JSON in and out, updates by webhook. */
export const botAdapter: ChannelAdapter<'bot'> = {
  channel: 'bot',

  async sendText(config, message, call) {
    if (codePointLength(measuredByTelegram(message.text)) > BOT_TEXT_LIMIT)
      throw AppError.badRequest(platformTexts.textLength);
    // A private chat's id is the user's id: what the contact is keyed by.
    if (!/^-?\d+$/.test(message.to)) throw new ProviderError(`bot: ${message.to} is not a Telegram chat id`);
    const result = await callMethod(
      config,
      'sendMessage',
      { chat_id: Number(message.to), text: message.text },
      call,
    );
    const sent = SentMessage.safeParse(result);
    if (!sent.success) throw new ProviderError('bot answered sendMessage without a message');
    return { providerMessageId: botMessageId(sent.data.chat.id, sent.data.message_id) };
  },

  async registerInbound(config, callbackUrl, call) {
    await callMethod(
      config,
      'setWebhook',
      { url: callbackUrl, secret_token: config.secret_token, allowed_updates: ALLOWED_UPDATES },
      call,
      SET_WEBHOOK_WAIT_SECONDS,
    );
  },

  // A bot has one webhook: setWebhook replaces its URL, whoever set it.
  oneCallbackPerAccount: true,
  // And closes the one it had before it judges the new URL and secret (telegram-bot-api, Client.cpp:
  // process_set_webhook_query, then do_set_webhook and the new webhook's verification): a 400 leaves the
  // bot with none. Only its once-a-second 429 comes before.
  refusedRegistrationDropsCallback: true,

  // "Ports currently supported for webhooks: 443, 80, 88, 8443", and only over HTTPS.
  // setWebhook: "Ports currently supported for webhooks: 443, 80, 88, 8443."
  callbackUrlRules: { httpsOnly: true, ports: [443, 80, 88, 8443] },

  readInbound(config, request) {
    if (!sameSecret(headerValue(request.headers, BOT_SECRET_HEADER), config.secret_token)) {
      throw new InboundRejected('bot secret token header missing or wrong');
    }
    const update = Update.safeParse(JSON.parse(request.rawBody.toString('utf8')));
    // An update of another kind (edited_message, my_chat_member...) is acknowledged and dropped: a
    // non-2xx answer would only make Telegram send it again.
    if (!update.success || !update.data.message) return empty();
    const message = update.data.message;
    const id = botMessageId(message.chat.id, message.message_id);
    // Groups, supergroups and channels are not a customer's conversation.
    if (message.chat.type !== 'private' || !message.from || message.from.is_bot) return empty();
    const read = content(message);
    if (!read)
      return {
        ...empty(),
        unreadable: [
          {
            providerMessageId: id,
            reason:
              'bot message has no content we keep (a service message, or a kind not read: a story, a game...)',
          },
        ],
      };
    return {
      messages: [
        {
          providerMessageId: id,
          from: String(message.from.id),
          keyedBy: 'user_id',
          name: nameOf(message.from),
          ...read,
          sentAt: new Date(message.date * 1000),
        },
      ],
      statuses: [],
    };
  },
};
