import { AppError, type ChannelConfig, platformTexts } from '@inbox/contracts';
import { sameSecret } from '@inbox/service-kit';
import { z } from 'zod';
import {
  type ChannelAdapter,
  type InboundBatch,
  InboundRejected,
  type MissedCallback,
  type NotifiedResource,
  type OAuthTokens,
  type ProviderCall,
  ProviderError,
  type ProviderRefusal,
  type RefreshGrant,
  type TokenGrant,
} from './channel-adapter.js';
import { callProvider, joinUrl, type ProviderAnswer, retryAfterNote } from './http.js';

// Facts about Mercado Livre's API below are from its developer documentation (developers.mercadolivre.com.br:
// "Receba notificações" / "Receive notifications", "Gerenciar perguntas e respostas", "Mensagens pós-venda",
// "Autenticação e autorização"): notifications are unsigned POSTs naming a resource, which the
// application then GETs with the seller's OAuth token; access tokens live 6 hours and refresh tokens are
// single-use.

type MarketConfig = ChannelConfig<'market'>;
const CHANNEL = 'market';

/** The topics whose notifications carry a buyer's words: questions on listings, post-sale messages. */
export const MARKET_TOPICS = ['questions', 'messages'] as const;

/** POST /answers takes an answer of up to 2000 characters. */
export const ANSWER_TEXT_LIMIT = 2000;
/** A post-sale message from the seller: up to 350 characters. */
export const POST_SALE_TEXT_LIMIT = 350;

/** `application_id` and `user_id` come as numbers or digit strings, depending on the topic. */
const numericId = z.union([z.number().int().nonnegative(), z.string().regex(/^\d{1,20}$/)]).transform(String);

/**
 * Lost notifications asked per call, and at most, per topic and poll, calls and notifications read: ML
 * keeps two days of them and pages by offset only, so each poll reads the list from its start. The
 * tenant's `base_url` answers these, so a poll is bounded whatever pages it gets: 2,000 a topic every ten
 * minutes is a few a second, well under what the integration's callbacks may bring.
 */
const MISSED_PAGE = 50;
const MISSED_PAGES = 40;
const MISSED_PER_TOPIC = 2_000;

/** A notification as Mercado Livre posts it; only the ids are trusted, and only after checking them. */
const Notification = z.object({
  _id: z.string().max(100).optional(),
  resource: z.string().min(1).max(300),
  user_id: numericId,
  topic: z.string().min(1).max(100),
  application_id: numericId,
  attempts: z.number().int().optional(),
  sent: z.string().max(100).optional(),
  received: z.string().max(100).optional(),
});

/**
 * GET /missed_feeds: `{ messages }`, each a lost notification with what ML sent and was answered
 * ("Histórico das notificações"); only the notification's own fields are read.
 */
const MissedFeeds = z.object({ messages: z.array(z.unknown()).max(1_000) });

/** Mercado Livre's error body: `{ message, error, status, cause }`. */
const ErrorBody = z.object({
  message: z.string().optional(),
  error: z.string().optional(),
  status: z.number().optional(),
  cause: z.unknown().optional(),
});

const Grant = z.object({
  access_token: z.string().min(1).max(2000),
  refresh_token: z.string().min(1).max(2000),
  expires_in: z.number().int().positive(),
});

const Question = z.object({
  id: z.number().int(),
  seller_id: z.number().int(),
  text: z.string().max(10_000),
  status: z.string().max(50),
  date_created: z.string().max(100),
  from: z.object({ id: z.number().int(), nickname: z.string().max(200).optional() }).nullish(),
});

const userRef = z.object({ user_id: numericId, name: z.string().max(200).nullish() });
const PostSaleMessage = z.object({
  id: z.string().min(1).max(100),
  from: userRef,
  to: userRef,
  text: z.string().max(10_000),
  status: z.string().max(50).nullish(),
  message_date: z
    .object({ created: z.string().nullish(), received: z.string().nullish() })
    .partial()
    .nullish(),
  message_resources: z
    .array(z.object({ id: z.string().max(50), name: z.string().max(50) }))
    .max(20)
    .nullish(),
});
/** GET /messages/{id} answers the message inside `messages` (with null paging); a bare message is read too. */
const MessageAnswer = z.union([z.object({ messages: z.array(PostSaleMessage).max(1) }), PostSaleMessage]);

const User = z.object({ id: z.number().int(), nickname: z.string().max(200).optional() });

const empty = (): InboundBatch => ({ messages: [], statuses: [] });

/** A message's date, or now when the provider gives none that parses. */
function dateOf(value: string | null | undefined): Date {
  const parsed = Date.parse(value ?? '');
  return Number.isFinite(parsed) ? new Date(parsed) : new Date();
}

/**
 * A refusal in words. 401 is a token ML no longer takes (after the one refresh-and-retry); 429 is its
 * rate limit ("local_rate_limited"); 403 a resource the seller may not touch.
 */
function failure(what: string, answer: ProviderAnswer, refusal?: ProviderRefusal): ProviderError {
  const parsed = ErrorBody.safeParse(answer.body);
  const said = parsed.success ? [parsed.data.error, parsed.data.message].filter(Boolean).join(': ') : '';
  const detail = said ? `: ${said}` : '';
  if (answer.status === 429) {
    return new ProviderError(
      `${CHANNEL}: Mercado Livre is rate limiting the application (${what} answered 429${detail})${retryAfterNote(answer)}`,
      429,
      undefined,
      { refusal: 'rate_limited' },
    );
  }
  if (answer.status === 401 || refusal === 'credentials_rejected') {
    return new ProviderError(
      `${CHANNEL}: Mercado Livre refused the seller's credentials (${what} answered ${answer.status}${detail})`,
      answer.status,
      undefined,
      { refusal: 'credentials_rejected' },
    );
  }
  return new ProviderError(`${CHANNEL} answered ${answer.status} to ${what}${detail}`, answer.status);
}

/**
 * Spends the refresh token for a new pair (POST /oauth/token, grant_type=refresh_token), sent as the form
 * every example of ML's authentication guide sends. `invalid_grant`
 * is a refresh token already spent, revoked, or of an app the seller removed: only the seller's new
 * consent helps, so the integration is disconnected.
 */
async function refreshGrant(
  config: MarketConfig,
  refreshToken: string,
  call: ProviderCall,
): Promise<TokenGrant> {
  const answer = await callProvider(call, CHANNEL, joinUrl(config.base_url, 'oauth/token'), {
    method: 'POST',
    headers: {},
    body: new URLSearchParams({
      grant_type: 'refresh_token',
      client_id: config.client_id,
      client_secret: config.client_secret,
      refresh_token: refreshToken,
    }),
  });
  if (!answer.ok) {
    const error = ErrorBody.safeParse(answer.body);
    const code = error.success ? error.data.error : undefined;
    const rejected = code === 'invalid_grant' || code === 'invalid_client' || answer.status === 401;
    throw failure('POST /oauth/token', answer, rejected ? 'credentials_rejected' : undefined);
  }
  const grant = Grant.safeParse(answer.body);
  if (!grant.success) throw new ProviderError(`${CHANNEL} answered /oauth/token without a token pair`);
  return {
    accessToken: grant.data.access_token,
    refreshToken: grant.data.refresh_token,
    expiresIn: grant.data.expires_in,
  };
}

/** Without the connector's token store (never in production), the config's token as it is. */
const configTokens = (config: MarketConfig, call: ProviderCall): OAuthTokens => ({
  current: async () => config.access_token,
  renew: async (_rejected, refresh) => (await refresh(config.refresh_token, call.signal)).accessToken,
});

/** One call with the seller's token: refreshed first when it expires soon, and once more on a 401. */
async function authorized(
  config: MarketConfig,
  call: ProviderCall,
  method: 'GET' | 'POST',
  path: string,
  body?: unknown,
): Promise<ProviderAnswer> {
  const tokens = call.oauth ?? configTokens(config, call);
  const refresh: RefreshGrant = (refreshToken, signal) =>
    refreshGrant(config, refreshToken, { ...call, signal });
  const url = joinUrl(config.base_url, path);
  const request = (token: string) =>
    callProvider(call, CHANNEL, url, {
      method,
      headers: { authorization: `Bearer ${token}` },
      ...(body === undefined ? {} : { body }),
    });
  const token = await tokens.current(refresh);
  const answer = await request(token);
  if (answer.status !== 401) return answer;
  return request(await tokens.renew(token, refresh));
}

async function fetchJson(config: MarketConfig, call: ProviderCall, path: string): Promise<unknown> {
  const answer = await authorized(config, call, 'GET', path);
  if (!answer.ok) throw failure(`GET /${path.split('?')[0]}`, answer);
  return answer.body;
}

/**
 * A notified resource; undefined when ML says it is gone (404) or not the seller's (403): such a
 * notification is acknowledged, as asking again would change nothing. Other failures are worth a retry.
 */
async function fetchNotified(config: MarketConfig, call: ProviderCall, path: string): Promise<unknown> {
  const answer = await authorized(config, call, 'GET', path);
  if (answer.status === 404 || answer.status === 403) return undefined;
  if (!answer.ok) throw failure(`GET /${path.split('?')[0]}`, answer);
  return answer.body;
}

const gone = (id: string, what: string): InboundBatch => ({
  ...empty(),
  unreadable: [{ providerMessageId: id, reason: `market ${what} is gone or not the seller's` }],
});

/** The buyer's nickname, where the resource did not name them; null when ML does not say. */
async function nicknameOf(config: MarketConfig, call: ProviderCall, userId: string): Promise<string | null> {
  try {
    const user = User.safeParse(await fetchJson(config, call, `users/${userId}`));
    return user.success ? (user.data.nickname ?? null) : null;
  } catch (error) {
    // A name is not worth losing the message for.
    call.logger.warn({ err: error, channel: CHANNEL }, 'buyer nickname not fetched');
    return null;
  }
}

const QUESTION_RESOURCE = /^\/questions\/(\d{1,20})$/;
/** A messages notification names the message by id (a bare id; `/messages/<id>` is read too). */
const MESSAGE_RESOURCE = /^(?:\/messages\/)?([A-Za-z0-9_-]{1,64})$/;

async function resolveQuestion(config: MarketConfig, id: string, call: ProviderCall): Promise<InboundBatch> {
  const body = await fetchNotified(config, call, `questions/${id}`);
  if (body === undefined) return gone(id, 'question');
  const question = Question.safeParse(body);
  if (!question.success) throw new ProviderError(`${CHANNEL} answered GET /questions/${id} with no question`);
  const { data } = question;
  // Only what the fetch says counts: a question of another seller is not this integration's.
  if (String(data.seller_id) !== config.seller_id || !data.from) return empty();
  // Answered, deleted, banned or under review: nothing to answer (a notification also fires when the
  // seller answers on ML's own site).
  if (data.status.toUpperCase() !== 'UNANSWERED') return empty();
  const buyer = String(data.from.id);
  return {
    messages: [
      {
        providerMessageId: String(data.id),
        from: buyer,
        keyedBy: 'user_id',
        name: data.from.nickname ?? (await nicknameOf(config, call, buyer)),
        text: data.text,
        type: 'text',
        sentAt: dateOf(data.date_created),
        replyContext: { kind: 'question', id: String(data.id) },
      },
    ],
    statuses: [],
  };
}

async function resolveMessage(config: MarketConfig, id: string, call: ProviderCall): Promise<InboundBatch> {
  const body = await fetchNotified(config, call, `messages/${id}?tag=post_sale`);
  if (body === undefined) return gone(id, 'message');
  const answer = MessageAnswer.safeParse(body);
  const message = answer.success
    ? 'messages' in answer.data
      ? answer.data.messages[0]
      : answer.data
    : undefined;
  if (!message) throw new ProviderError(`${CHANNEL} answered GET /messages/${id} with no message`);
  // The seller's own messages (sent here or on ML's site) are not a buyer's.
  if (message.from.user_id === config.seller_id || message.to.user_id !== config.seller_id) return empty();
  if (message.status && message.status !== 'available') return empty();
  const resources = message.message_resources ?? [];
  const pack = resources.find((resource) => resource.name === 'packs' || resource.name === 'orders');
  const seller = resources.find((resource) => resource.name === 'sellers');
  if (!pack || (seller && seller.id !== config.seller_id)) {
    return {
      ...empty(),
      unreadable: [{ providerMessageId: message.id, reason: 'market message names no sale of this seller' }],
    };
  }
  const buyer = message.from.user_id;
  return {
    messages: [
      {
        providerMessageId: message.id,
        from: buyer,
        keyedBy: 'user_id',
        name: message.from.name?.trim() || (await nicknameOf(config, call, buyer)),
        text: message.text,
        type: 'text',
        sentAt: dateOf(message.message_date?.created ?? message.message_date?.received),
        replyContext: { kind: 'pack', id: pack.id },
      },
    ],
    statuses: [],
  };
}

/**
 * What a notification asks to be fetched. Unsigned: anyone may post one. It names our application and
 * seller, or it is not for us; and even then only the ids are used, the resource itself is fetched with
 * our token.
 */
function notifiedBy(config: MarketConfig, body: unknown): InboundBatch {
  const notification = Notification.safeParse(body);
  if (!notification.success) throw new InboundRejected('market body is not a Mercado Livre notification');
  const { application_id, user_id, topic, resource } = notification.data;
  if (!sameSecret(application_id, config.client_id) || !sameSecret(user_id, config.seller_id)) {
    throw new InboundRejected('market notification names another application or seller');
  }
  const pattern =
    topic === 'questions' ? QUESTION_RESOURCE : topic === 'messages' ? MESSAGE_RESOURCE : undefined;
  const id = pattern?.exec(resource)?.[1];
  // Other topics (items, orders...) are acknowledged and dropped: another answer makes ML retry them.
  if (!id) return empty();
  return { ...empty(), toFetch: [{ topic, resource: id }] };
}

/** A lost notification's batch when it is this integration's, else undefined. */
function readsAsOurs(config: MarketConfig, lost: unknown): InboundBatch | undefined {
  try {
    return notifiedBy(config, lost);
  } catch (error) {
    if (error instanceof InboundRejected) return undefined;
    throw error;
  }
}

/**
 * market speaks Mercado Livre's API: unsigned notifications checked against the application and seller,
 * then the named question or post-sale message fetched with the seller's token; replies answer the
 * buyer's latest unanswered question (POST /answers) or go to their sale (post-sale messages).
 */
export const marketAdapter: ChannelAdapter<'market'> = {
  channel: 'market',

  async sendText(config, message, call) {
    if (!/^\d{1,20}$/.test(message.to)) throw new ProviderError(`${CHANNEL}: ${message.to} is not a user id`);
    const context = await call.replyContexts?.latest(message.to);
    if (context?.questionId) {
      if (message.text.length > ANSWER_TEXT_LIMIT) throw AppError.badRequest(platformTexts.textLength);
      const answer = await authorized(config, call, 'POST', 'answers', {
        question_id: Number(context.questionId),
        text: message.text,
      });
      if (!answer.ok) throw failure('POST /answers', answer);
      await call.replyContexts?.answered(message.to, context.questionId);
      // An answer has no id of its own: it is its question's.
      return { providerMessageId: `${context.questionId}:answer` };
    }
    if (context?.packId) {
      if (message.text.length > POST_SALE_TEXT_LIMIT) throw AppError.badRequest(platformTexts.textLength);
      const answer = await authorized(
        config,
        call,
        'POST',
        `messages/packs/${context.packId}/sellers/${config.seller_id}?tag=post_sale`,
        { from: { user_id: config.seller_id }, to: { user_id: message.to }, text: message.text },
      );
      if (!answer.ok) throw failure('POST /messages/packs', answer);
      const sent = MessageAnswer.safeParse(answer.body);
      const id = sent.success
        ? 'messages' in sent.data
          ? sent.data.messages[0]?.id
          : sent.data.id
        : undefined;
      if (!id) throw new ProviderError(`${CHANNEL} answered POST /messages/packs without a message id`);
      return { providerMessageId: id };
    }
    throw new ProviderError(`${CHANNEL}: buyer ${message.to} has no open question or sale to reply to`);
  },

  async registerInbound(config, callbackUrl, call) {
    // Mercado Livre takes the notification URL only in its developer console; what the API can do is
    // prove the token is the seller's.
    const me = User.safeParse(await fetchJson(config, call, 'users/me'));
    if (!me.success || String(me.data.id) !== config.seller_id) {
      throw new ProviderError(
        `${CHANNEL}: the access token is not seller ${config.seller_id}'s`,
        undefined,
        undefined,
        {
          refusal: 'credentials_rejected',
        },
      );
    }
    return { manual: { url: callbackUrl, topics: [...MARKET_TOPICS] } };
  },

  // ML wants a 200 within 500 ms ("Receba notificações") and retries for an hour at most; the resource is
  // fetched with the seller's token, refreshed first when it expired, which can take longer. Kept, a
  // notification is answered at once, and a fetch ML will not answer now is tried again for a day.
  callbackIntake: 'kept',

  readInbound(config, request) {
    return notifiedBy(config, JSON.parse(request.rawBody.toString('utf8')));
  },

  // ML retries a notification for an hour; one still not answered 200 is lost, and listed for two days by
  // /missed_feeds: the connector polls it, so one refused before it was read (a rate limit, an outage
  // longer than the hour) is still taken in.
  async *missedCallbacks(config, call) {
    for (const topic of MARKET_TOPICS) {
      // Paged by what ML gave, to an empty page: a limit it caps below ours is no end.
      for (let page = 0, offset = 0; page < MISSED_PAGES && offset < MISSED_PER_TOPIC; page++) {
        const query = new URLSearchParams({
          app_id: config.client_id,
          topic,
          offset: String(offset),
          limit: String(MISSED_PAGE),
        });
        const answer = MissedFeeds.safeParse(await fetchJson(config, call, `missed_feeds?${query}`));
        if (!answer.success)
          throw new ProviderError(`${CHANNEL} answered GET /missed_feeds without messages`);
        if (answer.data.messages.length === 0) break;
        const listed = answer.data.messages.slice(0, MISSED_PER_TOPIC - offset);
        offset += listed.length;
        const missed: MissedCallback[] = [];
        for (const lost of listed) {
          // Another seller's of the application, or not a notification: not ours to take.
          const batch = readsAsOurs(config, lost);
          const notified = batch?.toFetch?.[0];
          if (notified) missed.push({ key: `${notified.topic}:${notified.resource}`, batch });
        }
        yield missed;
      }
    }
  },

  async resolveInbound(config, notified: NotifiedResource, call) {
    return notified.topic === 'questions'
      ? resolveQuestion(config, notified.resource, call)
      : resolveMessage(config, notified.resource, call);
  },
};
