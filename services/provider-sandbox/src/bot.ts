import { type Request, type Response, Router } from 'express';
import { z } from 'zod';
import type {
  ChannelEmulator,
  InboundDelivery,
  InboundMessage,
  SandboxStores,
  WebhookRegistration,
} from './channel-emulator.js';
import { ControlError } from './control-error.js';
import { answerFault } from './faults.js';
import { inboundKinds } from './inbound-kinds.js';
import { jsonBody } from './json-body.js';
import { parseControl } from './parse-control.js';
import { unixSeconds } from './provider-ids.js';
import type { RedeliveryPolicy } from './redelivery.js';
import { SHARED_PIN } from './shared-pin.js';

// Emulates the Telegram Bot API, the provider behind the `bot` channel, from its reference
// (core.telegram.org/bots/api: "Making requests", getMe, setWebhook, deleteWebhook, getWebhookInfo,
// sendMessage, Update, Message, User, Chat, ResponseParameters; core.telegram.org/bots/faq on limits).
/** The ports setWebhook accepts (Bot API, setWebhook). */
const WEBHOOK_PORTS = [443, 80, 88, 8443];
const CHANNEL = 'bot';

/**
 * Telegram's webhook retries (telegram-bot-api, WebhookActor::on_update_error): any answer but a 2xx, or
 * none, is tried again. Each update keeps a delay, 1 s at first: an answer with `Retry-After` (at most
 * 3,600 s) is tried again after that many seconds, the delay unchanged; one without it is tried again at
 * once the first time, and afterwards after the delay doubled, at most a random 60–120 s. An update is
 * dropped once its next try would fall past its expiry, a day after the message. Updates of a chat go out
 * one at a time: its later ones wait until the one being delivered is taken or dropped (each message's
 * webhook queue is its chat, Client::add_message_update).
 */
export const telegramRedelivery: RedeliveryPolicy = {
  nextWaitMs({ answers, elapsedMs }) {
    let delay = 1;
    let wait = 0;
    for (const [earlierFailures, answer] of answers.entries()) {
      // HttpQuery::get_retry_after: a whole number of seconds, else none.
      const asked = /^\d{1,9}$/.test(answer?.retryAfter ?? '')
        ? Math.min(Number(answer!.retryAfter), 3_600)
        : 0;
      if (asked === 0 && earlierFailures > 0) {
        // td::Random::fast(WEBHOOK_MAX_RESEND_TIMEOUT, 2 * WEBHOOK_MAX_RESEND_TIMEOUT), bounds included.
        delay = Math.min(60 + Math.floor(Math.random() * 61), delay * 2);
        wait = delay;
      } else wait = asked;
    }
    return elapsedMs + wait * 1_000 > 24 * 3_600_000 ? undefined : wait * 1_000;
  },
};

/** `POST /_sandbox/bot/blocks`: the bot, by its id, and the user who blocks it. */
const blockBody = z.object({
  account: z.string().regex(/^\d+$/, 'the bot id: the digits before the token colon'),
  user: z.string().regex(/^\d+$/, "a Telegram user id's digits"),
});

/** A token is `<bot id>:<secret>`; the secret as BotFather writes it. */
const TOKEN_SECRET = /^[\w-]+$/;
/** setWebhook: "1-256 characters. Only characters A-Z, a-z, 0-9, _ and - are allowed." (empty: none). */
const SECRET_TOKEN = /^[\w-]{0,256}$/;
const TEXT_LIMIT = 4096;
/** How long flood control asks a bot to wait, in the sandbox. */
const RETRY_AFTER_SECONDS = 5;

/**
 * A message's text as Telegram keeps it (tdlib's clean_input_string, td/telegram/misc.cpp, then
 * fix_formatted_text, td/telegram/MessageEntity.cpp): control characters become spaces, CR, U+2028-U+202E
 * and the combining marks U+030A, U+0333 and U+033F are dropped, then spaces and newlines (only those) are
 * trimmed from both ends.
 */
function keptText(text: string): string {
  return (
    text
      // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what Telegram replaces.
      .replace(/[\u0000-\u0009\u000b\u000c\u000e-\u001f]/g, ' ')
      .replace(/[\r\u2028-\u202e]|\u030a|\u0333|\u033f/g, '')
      .replace(/^[ \n]+|[ \n]+$/g, '')
  );
}

/** The descriptions Telegram gives with each error code it answers here. */
const DESCRIPTIONS: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden: bot was blocked by the user',
  404: 'Not Found',
  500: 'Internal Server Error',
  502: 'Bad Gateway',
};

/** Telegram's error answer; flood control's (429) says how long to wait, in its words and its parameters. */
export const telegramError = (code: number, description?: string, retryAfter = RETRY_AFTER_SECONDS) => ({
  ok: false,
  error_code: code,
  description:
    description ??
    (code === 429
      ? `Too Many Requests: retry after ${retryAfter}`
      : (DESCRIPTIONS[code] ?? 'Internal Server Error')),
  ...(code === 429 ? { parameters: { retry_after: retryAfter } } : {}),
});

interface TelegramUser {
  id: number;
  is_bot: boolean;
  first_name: string;
  last_name?: string;
  username?: string;
}

interface Webhook {
  url: string;
  secretToken?: string;
  allowedUpdates?: string[];
}

interface Bot {
  id: number;
  webhook?: Webhook;
  nextUpdateId: number;
  /** The users who wrote to the bot: the only private chats a bot may write to. */
  chats: Map<number, TelegramUser>;
  /** Message ids are counted per chat, both directions alike. */
  lastMessageId: Map<number, number>;
  /** Users who blocked the bot: its sends to them are refused until they write to it again. */
  blockedBy: Set<number>;
  /** When the bot may set a webhook URL again: once a second. */
  nextSetWebhookAt: number;
}

/** The parameters of a call: Telegram takes a query string, a form or JSON alike. */
function parametersOf(req: Request): Record<string, unknown> {
  const body = req.body && typeof req.body === 'object' ? (req.body as Record<string, unknown>) : {};
  return { ...(req.query as Record<string, unknown>), ...body };
}

function userOf(id: number, name: string | undefined): TelegramUser {
  const [first, ...rest] = (name ?? '').trim().split(/\s+/);
  // Every Telegram user has a first name; one the sandbox is not told is made up.
  const user: TelegramUser = { id, is_bot: false, first_name: first || `User${id}` };
  if (rest.length > 0) user.last_name = rest.join(' ');
  return user;
}

const ok = (res: Response, result: unknown, description?: string) =>
  res.json({ ok: true, result, ...(description ? { description } : {}) });
const refuse = (res: Response, code: number, description?: string) =>
  res.status(code).json(telegramError(code, description));

export function createBot(stores: SandboxStores): ChannelEmulator {
  const bots = new Map<string, Bot>();
  const router = Router();
  router.use(jsonBody);

  const bot = (account: string): Bot => {
    let found = bots.get(account);
    if (!found) {
      found = {
        id: Number(account),
        nextUpdateId: 100_000_000,
        chats: new Map(),
        lastMessageId: new Map(),
        blockedBy: new Set(),
        nextSetWebhookAt: 0,
      };
      bots.set(account, found);
    }
    return found;
  };
  const nextMessageId = (current: Bot, chatId: number) => {
    const id = (current.lastMessageId.get(chatId) ?? 0) + 1;
    current.lastMessageId.set(chatId, id);
    return id;
  };
  const botUser = (current: Bot): TelegramUser => ({
    id: current.id,
    is_bot: true,
    first_name: 'Sandbox Bot',
    username: `sandbox_${current.id}_bot`,
  });

  const methods: Record<string, (req: Request, res: Response, current: Bot, account: string) => void> = {
    getMe(_req, res, current) {
      ok(res, {
        ...botUser(current),
        can_join_groups: true,
        can_read_all_group_messages: false,
        supports_inline_queries: false,
        can_connect_to_business: false,
        has_main_web_app: false,
      });
    },

    setWebhook(req, res, current) {
      const params = parametersOf(req);
      const url = typeof params.url === 'string' ? params.url : '';
      // An empty url removes the webhook, as deleteWebhook does.
      if (url === '') {
        const had = current.webhook !== undefined;
        current.webhook = undefined;
        ok(res, true, had ? 'Webhook was deleted' : 'Webhook is already deleted');
        return;
      }
      // A URL is taken once a second per bot, before anything else about the call is looked at
      // (telegram-bot-api, Client.cpp, process_set_webhook_query); removing the webhook is not counted.
      const now = Date.now();
      if (now < current.nextSetWebhookAt) {
        res.status(429).json(telegramError(429, undefined, 1));
        return;
      }
      current.nextSetWebhookAt = now + 1_000;
      const secret = params.secret_token;
      let allowed = params.allowed_updates;
      // In a query string or a form the list is JSON-serialized.
      if (typeof allowed === 'string') {
        try {
          allowed = JSON.parse(allowed);
        } catch {
          refuse(res, 400, "Bad Request: can't parse allowed updates JSON object");
          return;
        }
      }
      if (allowed !== undefined && !(Array.isArray(allowed) && allowed.every((u) => typeof u === 'string'))) {
        refuse(res, 400, "Bad Request: can't parse allowed updates JSON object");
        return;
      }
      const previous = current.webhook;
      // Omitted: the previous setting is kept.
      const allowedUpdates = allowed !== undefined ? (allowed as string[]) : previous?.allowedUpdates;
      // Unchanged only when the URL and the secret are (the server compares the certificate, connections
      // and address too, none of which the sandbox takes) and no pending update is to be dropped.
      if (
        previous?.url === url &&
        previous.secretToken === (typeof secret === 'string' && secret !== '' ? secret : undefined) &&
        !['true', true].includes(params.drop_pending_updates as string | boolean)
      ) {
        current.webhook = { ...previous, ...(allowedUpdates ? { allowedUpdates } : {}) };
        ok(res, true, 'Webhook is already set');
        return;
      }
      // Any other URL closes the bot's webhook before the new one is judged (process_set_webhook_query
      // closes it, on_webhook_closed erases it; do_set_webhook and the new webhook's verification judge
      // the new one after): a refusal from here on leaves the bot with no webhook at all.
      current.webhook = undefined;
      let parsed: URL;
      try {
        parsed = new URL(url);
      } catch {
        refuse(res, 400, 'Bad Request: invalid webhook URL specified');
        return;
      }
      if (parsed.protocol !== 'https:' && !(stores.allowHttpCallbacks && parsed.protocol === 'http:')) {
        refuse(res, 400, 'Bad Request: bad webhook: An HTTPS URL must be provided for webhook');
        return;
      }
      // Telegram calls four ports only; a local stack's connector (http allowed) listens on any.
      const port = Number(parsed.port || (parsed.protocol === 'https:' ? 443 : 80));
      if (!stores.allowHttpCallbacks && !WEBHOOK_PORTS.includes(port)) {
        refuse(res, 400, 'Bad Request: bad webhook: Webhook can be set up only on ports 80, 88, 443 or 8443');
        return;
      }
      if (typeof secret === 'string' && secret.length > 256) {
        refuse(res, 400, 'Bad Request: secret token is too long');
        return;
      }
      // An empty secret is no secret: no header is sent.
      if (secret !== undefined && (typeof secret !== 'string' || !SECRET_TOKEN.test(secret))) {
        refuse(res, 400, 'Bad Request: secret token contains unallowed characters');
        return;
      }
      current.webhook = {
        url,
        ...(typeof secret === 'string' && secret !== '' ? { secretToken: secret } : {}),
        ...(allowedUpdates ? { allowedUpdates } : {}),
      };
      ok(res, true, 'Webhook was set');
    },

    deleteWebhook(_req, res, current) {
      const had = current.webhook !== undefined;
      current.webhook = undefined;
      ok(res, true, had ? 'Webhook was deleted' : 'Webhook is already deleted');
    },

    getWebhookInfo(_req, res, current) {
      const webhook = current.webhook;
      ok(res, {
        url: webhook?.url ?? '',
        has_custom_certificate: false,
        pending_update_count: 0,
        ...(webhook ? { max_connections: 40, ip_address: '149.154.167.220' } : {}),
        ...(webhook?.allowedUpdates ? { allowed_updates: webhook.allowedUpdates } : {}),
      });
    },

    sendMessage(req, res, current, account) {
      const fault = stores.faults.find(CHANNEL, account);
      if (fault) {
        answerFault(fault, res, (status) => telegramError(status), stores.faultHoldMs, rateLimited);
        return;
      }
      const params = parametersOf(req);
      const chatId = Number(params.chat_id);
      // The text is judged before the chat (telegram-bot-api's process_send_message_query).
      if (typeof params.text !== 'string' || params.text === '') {
        refuse(res, 400, 'Bad Request: message text is empty');
        return;
      }
      const text = keptText(params.text);
      if (text === '') {
        refuse(res, 400, 'Bad Request: text must be non-empty');
        return;
      }
      // Counted in code points once cleaned and trimmed: the server's check is the kept text's
      // `utf8_length` (tdlib, td/telegram/MessageContent.cpp), so an emoji outside the BMP is one
      // character, and 4,096 of them with a newline after are not too long.
      if ([...text].length > TEXT_LIMIT) {
        refuse(res, 400, 'Bad Request: message is too long');
        return;
      }
      if (params.chat_id === undefined || params.chat_id === '') {
        refuse(res, 400, 'Bad Request: chat_id is empty');
        return;
      }
      // A bot writes only to users who wrote to it first.
      const user = Number.isSafeInteger(chatId) ? current.chats.get(chatId) : undefined;
      if (!user) {
        refuse(res, 400, 'Bad Request: chat not found');
        return;
      }
      if (current.blockedBy.has(chatId)) {
        refuse(res, 403, 'Forbidden: bot was blocked by the user');
        return;
      }
      const message = {
        message_id: nextMessageId(current, chatId),
        from: botUser(current),
        chat: { ...chatOf(user) },
        date: unixSeconds(new Date()),
        text,
      };
      stores.sent.record({
        channel: CHANNEL,
        account,
        to: String(chatId),
        method: req.method,
        path: `${req.baseUrl}${req.path}`,
        body: params,
        provider_message_id: `${chatId}:${message.message_id}`,
        received_at: new Date().toISOString(),
      });
      ok(res, message);
    },
  };

  function rateLimited(res: Response): void {
    refuse(res, 429);
  }

  // `/bot<token>/<method>`, by GET or POST; method names are case-insensitive.
  // The token is judged as telegram-bot-api's ClientManager::send judges it, before Telegram is asked:
  // no colon, a leading 0 or over 80 characters, or a bot id out of 1..2^54, is an invalid token (401);
  // an id that is no integer at all is misdirected (421). A token of the right shape that is not the
  // bot's is Telegram's plain 401.
  router.all('/:botToken/:method', (req: Request<{ botToken: string; method: string }>, res) => {
    if (!req.params.botToken.startsWith('bot')) {
      refuse(res, 404);
      return;
    }
    const token = req.params.botToken.slice(3);
    const colon = token.indexOf(':');
    if (token.startsWith('0') || token.length > 80 || colon < 0) {
      refuse(res, 401, 'Unauthorized: invalid token specified');
      return;
    }
    const account = token.slice(0, colon);
    if (!/^\d{1,19}$/.test(account)) {
      res.status(421).json(telegramError(421, 'Misdirected Request: unallowed token specified'));
      return;
    }
    if (BigInt(account) >= 2n ** 54n) {
      refuse(res, 401, 'Unauthorized: invalid token specified');
      return;
    }
    if (!TOKEN_SECRET.test(token.slice(colon + 1)) || !stores.credentials.accept(CHANNEL, account, token)) {
      refuse(res, 401);
      return;
    }
    const name = Object.keys(methods).find(
      (known) => known.toLowerCase() === req.params.method.toLowerCase(),
    );
    if (!name) {
      refuse(res, 404, 'Not Found: method not found');
      return;
    }
    methods[name]!(req, res, bot(account), account);
  });

  function inboundDelivery(message: InboundMessage): InboundDelivery | undefined {
    const kind = telegramKinds.of(message.type);
    if (message.addressingMode !== undefined) {
      throw new ControlError(400, `${CHANNEL} has no addressing_mode: Telegram names users by id`);
    }
    if (!/^\d+$/.test(message.account)) {
      throw new ControlError(400, `${CHANNEL} account is the bot's id: the digits before the token's colon`);
    }
    const current = bot(message.account);
    const webhook = current.webhook;
    if (!webhook) return undefined;
    if (
      webhook.allowedUpdates &&
      webhook.allowedUpdates.length > 0 &&
      !webhook.allowedUpdates.includes('message')
    ) {
      throw new ControlError(
        409,
        `${CHANNEL} account ${message.account} did not subscribe to "message" updates`,
      );
    }
    const userId = Number(message.from);
    const user = userOf(userId, message.name);
    const chat =
      message.groupId === undefined
        ? chatOf(user)
        : { id: -Number(message.groupId.replace(/\D/g, '')), title: 'Grupo', type: 'supergroup' };
    // Only a private chat opens one the bot may answer; a user who writes to it has unblocked it.
    if (message.groupId === undefined) {
      current.chats.set(userId, user);
      current.blockedBy.delete(userId);
    }
    const messageId = nextMessageId(current, chat.id);
    const update = {
      update_id: current.nextUpdateId++,
      message: {
        message_id: messageId,
        from: user,
        chat,
        date: unixSeconds(new Date()),
        ...telegramContent(kind, message.text),
      },
    };
    return {
      url: webhook.url,
      headers: { 'Content-Type': 'application/json', ...secretHeader(webhook) },
      body: JSON.stringify(update),
      providerMessageId: `${chat.id}:${messageId}`,
      // The bot's webhook queue of the chat: one update of it at a time.
      queue: `${CHANNEL}:${message.account}:${chat.id}`,
    };
  }

  const secretHeader = (webhook: Webhook): Record<string, string> =>
    webhook.secretToken ? { 'X-Telegram-Bot-Api-Secret-Token': webhook.secretToken } : {};

  function webhooks(account?: string): WebhookRegistration[] {
    return [...bots].flatMap(([id, { webhook }]) =>
      webhook && (account === undefined || id === account)
        ? [
            {
              channel: CHANNEL,
              account: id,
              url: webhook.url,
              headers: secretHeader(webhook),
              events: webhook.allowedUpdates ?? [],
            },
          ]
        : [],
    );
  }

  // The user's Telegram app: blocking the bot (Block in its profile, or Stop and Block in the chat).
  const controlRouter = Router();
  controlRouter.post('/bot/blocks', (req, res) => {
    const { account, user } = parseControl(blockBody, req.body);
    bot(account).blockedBy.add(Number(user));
    res.json({ ok: true });
  });

  return {
    channel: CHANNEL,
    redelivery: telegramRedelivery,
    router,
    controlRouter,
    inboundDelivery,
    webhooks,
    rateLimited,
    reset: () => bots.clear(),
  };
}

/** A private chat's id is its user's, with the user's names. */
function chatOf(user: TelegramUser) {
  return {
    id: user.id,
    first_name: user.first_name,
    ...(user.last_name ? { last_name: user.last_name } : {}),
    ...(user.username ? { username: user.username } : {}),
    type: 'private',
  };
}

/** What a control names: `location` is a venue (a place with its name), `pin` a bare location. */
const telegramKinds = inboundKinds(CHANNEL, ['text', 'location', 'pin']);

/**
 * The Message fields of each kind, as the Bot API's Message object gives them: a venue comes with its
 * `location` on the message too ("for backward compatibility").
 */
function telegramContent(kind: (typeof telegramKinds.kinds)[number], text: string): Record<string, unknown> {
  const location = { latitude: SHARED_PIN.latitude, longitude: SHARED_PIN.longitude };
  switch (kind) {
    case 'text':
      return { text };
    case 'location':
      return { location, venue: { location, title: text, address: SHARED_PIN.address } };
    case 'pin':
      return { location };
  }
}
