import { randomBytes } from 'node:crypto';
import { inRequestContext } from '@inbox/service-kit';
import express, { type NextFunction, type Request, type Response, Router } from 'express';
import { z } from 'zod';
import type {
  ChannelEmulator,
  InboundDelivery,
  InboundMessage,
  SandboxStores,
  WebhookDelivery,
} from './channel-emulator.js';
import { ControlError } from './control-error.js';
import { answerFault } from './faults.js';
import { jsonBody } from './json-body.js';
import { parseControl } from './parse-control.js';
import type { RedeliveryPolicy } from './redelivery.js';
import { deliverWebhook, type WebhookAnswer } from './webhook-transport.js';

// Emulates Mercado Livre's API, the provider behind the `market` channel, from its developer documentation
// (developers.mercadolivre.com.br: "Autenticação e autorização" for /oauth/token and its rotating,
// single-use refresh tokens; "Receba notificações" for the notification body and topics; "Gerenciar
// perguntas e respostas" for /questions and /answers; "Mensagens pós-venda" for /messages with
// tag=post_sale; "Usuários" for /users). Errors are `{ message, error, status, cause }`.
const CHANNEL = 'market';

/** "The access token is valid for 6 hours." */
const ACCESS_TOKEN_SECONDS = 21_600;
const ANSWER_LIMIT = 2000;
const POST_SALE_LIMIT = 350;
const TOPICS = ['questions', 'messages'] as const;

/** Tries in all before a notification is lost: "após a oitava tentativa (1 hora)". */
const NOTIFICATION_TRIES = 8;
/** "A API de missed_feeds só guarda as notificações perdidas de até 2 dias atrás." */
const MISSED_KEPT_MS = 2 * 24 * 3_600_000;
/** "Por padrão, só serão mostradas 10 notificações, porém, você pode utilizar LIMIT e OFFSET." */
const MISSED_DEFAULT_LIMIT = 10;

/**
 * How ML delivers a notification again ("Receba notificações"): anything but an HTTP 200 is not
 * delivered, and it is tried again for an hour, eight tries in all, at exponential intervals ML does not
 * publish (here doubling from 3,600/127 s, so the eighth falls at the hour). Each try says its number in
 * `attempts` and its time in `sent`, as the documentation's examples show; a notification still not taken
 * after the eighth is lost, listed by /missed_feeds.
 */
export const mercadoLivreRedelivery: RedeliveryPolicy = {
  nextWaitMs: ({ failures }) =>
    failures >= NOTIFICATION_TRIES ? undefined : Math.round((3_600_000 / 127) * 2 ** (failures - 1)),
  takes: (answer) => answer?.status === 200,
  again(delivery, attempt) {
    const body = JSON.parse(String(delivery.body)) as Record<string, unknown>;
    return {
      ...delivery,
      body: JSON.stringify({ ...body, attempts: attempt, sent: new Date().toISOString() }),
    };
  },
};

export const mlError = (status: number, message: string, error: string) => ({
  message,
  error,
  status,
  cause: [],
});
const ERRORS: Record<number, [string, string]> = {
  400: ['bad request', 'bad_request'],
  401: ['invalid access token', 'invalid_token'],
  403: ['forbidden', 'forbidden'],
  404: ['resource not found', 'not_found'],
  429: ['Too Many Requests', 'local_rate_limited'],
  500: ['Internal server error', 'internal_error'],
};
const errorOf = (status: number) => {
  const [message, error] = ERRORS[status] ?? ['Internal server error', 'internal_error'];
  return mlError(status, message, error);
};
const refuse = (res: Response, status: number, message?: string, error?: string) => {
  const body = errorOf(status);
  res.status(status).json(message ? { ...body, message, ...(error ? { error } : {}) } : body);
};

/** A notification ML gave up on, with when. */
interface MissedFeed {
  lostAt: number;
  entry: { topic: unknown } & Record<string, unknown>;
}

interface Application {
  clientId: string;
  clientSecret: string;
  notificationUrl?: string;
  topics: string[];
}
interface AccessToken {
  sellerId: string;
  clientId: string;
  expiresAt: number;
}
interface RefreshToken {
  sellerId: string;
  clientId: string;
  spent: boolean;
}
interface Question {
  id: number;
  seller_id: number;
  item_id: string;
  date_created: string;
  text: string;
  status: 'UNANSWERED' | 'ANSWERED';
  hold: boolean;
  deleted_from_listing: boolean;
  answer: { text: string; status: string; date_created: string } | null;
  from: { id: number; answered_questions: number };
}
interface PostSaleMessage {
  id: string;
  site_id: string;
  client_id: number | null;
  from: { user_id: string; name: string };
  to: { user_id: string; name: string };
  status: 'available';
  subject: null;
  text: string;
  message_date: { received: string; available: string; notified: string | null; created: string; read: null };
  message_moderation: { status: 'clean'; reason: null; source: 'online'; moderation_date: string };
  message_attachments: null;
  message_resources: Array<{ id: string; name: string }>;
  conversation_first_message: boolean;
}

const hex = (bytes: number) => randomBytes(bytes).toString('hex');
/** ML's token shapes: `APP_USR-<client id>-<MMDDHH>-<hex>-<user id>` and `TG-<hex>-<user id>`. */
function issueAccessToken(clientId: string, sellerId: string): string {
  const now = new Date();
  const stamp = [now.getUTCMonth() + 1, now.getUTCDate(), now.getUTCHours()]
    .map((part) => String(part).padStart(2, '0'))
    .join('');
  return `APP_USR-${clientId}-${stamp}-${hex(16)}-${sellerId}`;
}
const issueRefreshToken = (sellerId: string) => `TG-${hex(12)}-${sellerId}`;

const applicationBody = z.object({
  client_id: z.string().regex(/^\d+$/, 'client_id must be digits'),
  client_secret: z.string().min(1, 'client_secret must not be empty'),
  notification_url: z.url('notification_url must be a URL').optional(),
  topics: z.array(z.enum(TOPICS)).default([...TOPICS]),
});
const authorizationBody = z.object({
  client_id: z.string().regex(/^\d+$/, 'client_id must be digits'),
  seller_id: z.string().regex(/^\d+$/, 'seller_id must be digits'),
  nickname: z.string().min(1).optional(),
});
const expiryBody = z.object({ seller_id: z.string().regex(/^\d+$/, 'seller_id must be digits') });

/** /oauth/token takes its parameters as a form, JSON or the query string. */
function tokenParameters(req: Request): Record<string, unknown> {
  const body = req.body && typeof req.body === 'object' ? (req.body as Record<string, unknown>) : {};
  return { ...(req.query as Record<string, unknown>), ...body };
}

export function createMarket(stores: SandboxStores, fetchImpl: typeof fetch): ChannelEmulator {
  const applications = new Map<string, Application>();
  const accessTokens = new Map<string, AccessToken>();
  const refreshTokens = new Map<string, RefreshToken>();
  const nicknames = new Map<string, string>();
  /** The applications each seller authorized. */
  const authorized = new Map<string, Set<string>>();
  const questions = new Map<number, Question>();
  const messages = new Map<string, PostSaleMessage>();
  /** A buyer's sale with a seller: `<seller>:<buyer>` → pack id. */
  const packs = new Map<string, string>();
  const pending = new Set<Promise<unknown>>();
  /** Each application's lost notifications, oldest first, as /missed_feeds lists them. */
  const missed = new Map<string, MissedFeed[]>();
  let nextQuestionId = 13_000_000_000;
  let nextPackId = 2_000_000_000_000_000;
  let nextItem = 1_000_000_000;

  const nicknameOf = (userId: string) => nicknames.get(userId) ?? `USUARIO${userId}`;

  function grant(clientId: string, sellerId: string) {
    const access = issueAccessToken(clientId, sellerId);
    const refresh = issueRefreshToken(sellerId);
    accessTokens.set(access, { sellerId, clientId, expiresAt: Date.now() + ACCESS_TOKEN_SECONDS * 1000 });
    refreshTokens.set(refresh, { sellerId, clientId, spent: false });
    return {
      access_token: access,
      token_type: 'Bearer',
      expires_in: ACCESS_TOKEN_SECONDS,
      scope: 'offline_access read write',
      user_id: Number(sellerId),
      refresh_token: refresh,
    };
  }

  /** A notification as ML posts it to the application's URL, for a topic it subscribed. */
  function notification(sellerId: string, topic: string, resource: string, userIdAsString: boolean) {
    const app = [...(authorized.get(sellerId) ?? [])]
      .map((clientId) => applications.get(clientId))
      .find((candidate) => candidate?.notificationUrl && candidate.topics.includes(topic));
    if (!app?.notificationUrl) return undefined;
    const now = new Date().toISOString();
    return {
      url: app.notificationUrl,
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({
        _id: hex(12),
        resource,
        user_id: userIdAsString ? sellerId : Number(sellerId),
        topic,
        application_id: Number(app.clientId),
        attempts: 1,
        sent: now,
        received: now,
      }),
    };
  }

  /** ML notifies the application of its own seller's changes too (an answer given): sent in the background. */
  function notifyLater(sellerId: string, topic: string, resource: string) {
    const delivery = notification(sellerId, topic, resource, false);
    if (!delivery) return;
    const sending = deliverWebhook(fetchImpl, delivery).catch(() => undefined);
    pending.add(sending);
    void sending.finally(() => pending.delete(sending));
  }

  const router = Router();
  router.use(inRequestContext(express.urlencoded({ extended: false, limit: '1mb' })), jsonBody);

  router.post('/oauth/token', (req, res) => {
    const params = tokenParameters(req);
    const app = applications.get(String(params.client_id ?? ''));
    if (!app || app.clientSecret !== params.client_secret) {
      refuse(res, 400, 'invalid client_id or client_secret.', 'invalid_client');
      return;
    }
    if (params.grant_type !== 'refresh_token') {
      refuse(res, 400, 'the sandbox grants tokens by refresh_token only', 'unsupported_grant_type');
      return;
    }
    const known = refreshTokens.get(String(params.refresh_token ?? ''));
    // Single use: a refresh token already exchanged is refused like an unknown one.
    if (!known || known.spent || known.clientId !== app.clientId) {
      refuse(
        res,
        400,
        'Error validating grant. Your authorization code or refresh token may be expired or it was already used',
        'invalid_grant',
      );
      return;
    }
    known.spent = true;
    res.json(grant(app.clientId, known.sellerId));
  });

  // Everything else takes the seller's token as `Authorization: Bearer`.
  router.use((req: Request, res: Response, next: NextFunction) => {
    const header = req.headers.authorization ?? '';
    const token = header.startsWith('Bearer ') ? accessTokens.get(header.slice(7)) : undefined;
    if (!token || token.expiresAt <= Date.now()) {
      refuse(res, 401);
      return;
    }
    res.locals.sellerId = token.sellerId;
    res.locals.clientId = token.clientId;
    const fault = stores.faults.find(CHANNEL, token.sellerId);
    if (fault) {
      answerFault(fault, res, errorOf, stores.faultHoldMs, rateLimited);
      return;
    }
    next();
  });

  // "Histórico das notificações": the application's notifications lost in the last two days, of one topic
  // when asked. The answer is `{ messages }` alone, as the documentation shows it: no total, no paging.
  router.get('/missed_feeds', (req, res) => {
    const appId = typeof req.query.app_id === 'string' ? req.query.app_id : '';
    if (!/^\d+$/.test(appId)) {
      refuse(res, 400, 'app_id is required', 'bad_request');
      return;
    }
    if (appId !== res.locals.clientId) {
      refuse(res, 403, 'The access token does not belong to the application', 'forbidden');
      return;
    }
    const number = (value: unknown, fallback: number) =>
      typeof value === 'string' && /^\d{1,6}$/.test(value) ? Number(value) : fallback;
    const offset = number(req.query.offset, 0);
    const limit = number(req.query.limit, MISSED_DEFAULT_LIMIT);
    const since = Date.now() - MISSED_KEPT_MS;
    const kept = (missed.get(appId) ?? []).filter((feed) => feed.lostAt >= since);
    missed.set(appId, kept);
    const topic = req.query.topic;
    const listed = typeof topic === 'string' ? kept.filter((feed) => feed.entry.topic === topic) : kept;
    res.json({ messages: listed.slice(offset, offset + limit).map((feed) => feed.entry) });
  });

  const userAnswer = (id: string) => ({
    id: Number(id),
    nickname: nicknameOf(id),
    site_id: 'MLB',
    country_id: 'BR',
    user_type: 'normal',
    permalink: `http://perfil.mercadolivre.com.br/${encodeURIComponent(nicknameOf(id))}`,
  });

  router.get('/users/me', (_req, res) => {
    res.json(userAnswer(res.locals.sellerId as string));
  });
  router.get('/users/:id', (req: Request<{ id: string }>, res) => {
    if (!/^\d+$/.test(req.params.id) || (!nicknames.has(req.params.id) && !authorized.has(req.params.id))) {
      refuse(res, 404, 'User not found', 'not_found');
      return;
    }
    res.json(userAnswer(req.params.id));
  });

  router.get('/questions/:id', (req: Request<{ id: string }>, res) => {
    const question = questions.get(Number(req.params.id));
    if (!question) {
      refuse(res, 404, 'Question not found', 'not_found');
      return;
    }
    if (String(question.seller_id) !== res.locals.sellerId) {
      refuse(res, 403, 'The caller is not the seller of the question', 'forbidden');
      return;
    }
    res.json(question);
  });

  router.post('/answers', (req, res) => {
    const body = (req.body ?? {}) as { question_id?: unknown; text?: unknown };
    const question = typeof body.question_id === 'number' ? questions.get(body.question_id) : undefined;
    if (!question || String(question.seller_id) !== res.locals.sellerId) {
      refuse(res, 404, 'Question not found', 'not_found');
      return;
    }
    if (typeof body.text !== 'string' || body.text.trim() === '' || body.text.length > ANSWER_LIMIT) {
      refuse(res, 400, `text must have between 1 and ${ANSWER_LIMIT} characters`, 'bad_request');
      return;
    }
    if (question.status !== 'UNANSWERED') {
      refuse(res, 400, 'The question is already answered', 'bad_request');
      return;
    }
    question.status = 'ANSWERED';
    question.answer = { text: body.text, status: 'ACTIVE', date_created: new Date().toISOString() };
    stores.sent.record({
      channel: CHANNEL,
      account: res.locals.sellerId as string,
      to: String(question.from.id),
      method: req.method,
      path: `${req.baseUrl}${req.path}`,
      body: req.body,
      provider_message_id: `${question.id}:answer`,
      received_at: new Date().toISOString(),
    });
    // "questions: notified of all questions asked or answered".
    notifyLater(String(question.seller_id), 'questions', `/questions/${question.id}`);
    res.json(question);
  });

  const requirePostSale = (req: Request, res: Response): boolean => {
    if (req.query.tag === 'post_sale') return true;
    refuse(res, 400, 'tag param is required', 'bad_request');
    return false;
  };

  router.get(
    '/messages/packs/:pack/sellers/:seller',
    (req: Request<{ pack: string; seller: string }>, res) => {
      if (!requirePostSale(req, res)) return;
      if (req.params.seller !== res.locals.sellerId) {
        refuse(res, 403);
        return;
      }
      const inPack = [...messages.values()].filter((message) =>
        message.message_resources.some(
          (resource) => resource.name === 'packs' && resource.id === req.params.pack,
        ),
      );
      res.json({
        paging: { limit: 10, offset: 0, total: inPack.length },
        conversation_status: {
          path: `/packs/${req.params.pack}/sellers/${req.params.seller}`,
          status: 'active',
          substatus: null,
        },
        messages: inPack.reverse(),
      });
    },
  );

  router.post(
    '/messages/packs/:pack/sellers/:seller',
    (req: Request<{ pack: string; seller: string }>, res) => {
      if (!requirePostSale(req, res)) return;
      const sellerId = res.locals.sellerId as string;
      const body = (req.body ?? {}) as {
        from?: { user_id?: unknown };
        to?: { user_id?: unknown };
        text?: unknown;
      };
      const buyer = String(body.to?.user_id ?? '');
      if (req.params.seller !== sellerId || String(body.from?.user_id ?? '') !== sellerId) {
        refuse(res, 403, 'The caller is not the seller of the pack', 'forbidden');
        return;
      }
      if (packs.get(`${sellerId}:${buyer}`) !== req.params.pack) {
        refuse(res, 404, 'Pack not found', 'not_found');
        return;
      }
      if (typeof body.text !== 'string' || body.text.trim() === '' || body.text.length > POST_SALE_LIMIT) {
        refuse(res, 400, `text must have between 1 and ${POST_SALE_LIMIT} characters`, 'bad_request');
        return;
      }
      const message = postSaleMessage(
        { user_id: sellerId, name: nicknameOf(sellerId) },
        { user_id: buyer, name: nicknameOf(buyer) },
        body.text,
        req.params.pack,
        sellerId,
        Number(res.locals.clientId),
      );
      stores.sent.record({
        channel: CHANNEL,
        account: sellerId,
        to: buyer,
        method: req.method,
        path: `${req.baseUrl}${req.path}`,
        body: req.body,
        provider_message_id: message.id,
        received_at: new Date().toISOString(),
      });
      res.status(201).json(message);
    },
  );

  router.get('/messages/:id', (req: Request<{ id: string }>, res) => {
    if (!requirePostSale(req, res)) return;
    const message = messages.get(req.params.id);
    if (!message) {
      refuse(res, 404, 'Message not found', 'not_found');
      return;
    }
    const sellerId = res.locals.sellerId as string;
    if (message.from.user_id !== sellerId && message.to.user_id !== sellerId) {
      refuse(res, 403);
      return;
    }
    // By id, paging and conversation_status are null: the message comes inside `messages`.
    res.json({ paging: null, conversation_status: null, messages: [message] });
  });

  function postSaleMessage(
    from: PostSaleMessage['from'],
    to: PostSaleMessage['to'],
    text: string,
    packId: string,
    sellerId: string,
    clientId: number | null,
  ): PostSaleMessage {
    const now = new Date().toISOString();
    const first = ![...messages.values()].some((message) =>
      message.message_resources.some((resource) => resource.name === 'packs' && resource.id === packId),
    );
    const message: PostSaleMessage = {
      id: hex(16),
      site_id: 'MLB',
      client_id: clientId,
      from,
      to,
      status: 'available',
      subject: null,
      text,
      message_date: { received: now, available: now, notified: null, created: now, read: null },
      message_moderation: { status: 'clean', reason: null, source: 'online', moderation_date: now },
      message_attachments: null,
      message_resources: [
        { id: packId, name: 'packs' },
        { id: sellerId, name: 'sellers' },
      ],
      conversation_first_message: first,
    };
    messages.set(message.id, message);
    return message;
  }

  function rateLimited(res: Response): void {
    refuse(res, 429);
  }

  function inboundDelivery(message: InboundMessage): InboundDelivery | undefined {
    if (message.type !== 'text') throw new ControlError(400, `${CHANNEL} inbound supports type "text" only`);
    if (message.groupId !== undefined || message.addressingMode !== undefined) {
      throw new ControlError(400, `${CHANNEL} has no groups nor addressing modes`);
    }
    if (!/^\d+$/.test(message.account))
      throw new ControlError(400, `${CHANNEL} account is the seller's user id`);
    const topic = message.topic ?? 'questions';
    if (!TOPICS.includes(topic as (typeof TOPICS)[number])) {
      throw new ControlError(400, `${CHANNEL} topic must be one of ${TOPICS.join(', ')}`);
    }
    const sellerId = message.account;
    const buyer = message.from;
    if (message.name) nicknames.set(buyer, message.name);
    if (topic === 'questions') {
      const question: Question = {
        id: nextQuestionId++,
        seller_id: Number(sellerId),
        item_id: `MLB${nextItem++}`,
        date_created: new Date().toISOString(),
        text: message.text,
        status: 'UNANSWERED',
        hold: false,
        deleted_from_listing: false,
        answer: null,
        from: { id: Number(buyer), answered_questions: 0 },
      };
      questions.set(question.id, question);
      const delivery = notification(sellerId, 'questions', `/questions/${question.id}`, false);
      return delivery && { ...delivery, providerMessageId: String(question.id) };
    }
    // A post-sale message is written in a sale: the buyer's one pack with this seller, made at the first.
    let packId = packs.get(`${sellerId}:${buyer}`);
    if (!packId) {
      packId = String(nextPackId++);
      packs.set(`${sellerId}:${buyer}`, packId);
    }
    const written = postSaleMessage(
      { user_id: buyer, name: message.name ?? '' },
      { user_id: sellerId, name: nicknameOf(sellerId) },
      message.text,
      packId,
      sellerId,
      null,
    );
    // A messages notification names the message by its id alone, and says user_id as a string.
    const delivery = notification(sellerId, 'messages', written.id, true);
    return delivery && { ...delivery, providerMessageId: written.id };
  }

  const controlRouter = Router();
  // The developer console: the application's credentials, notification URL and topics.
  controlRouter.post('/market/applications', (req, res) => {
    const body = parseControl(applicationBody, req.body);
    applications.set(body.client_id, {
      clientId: body.client_id,
      clientSecret: body.client_secret,
      ...(body.notification_url ? { notificationUrl: body.notification_url } : {}),
      topics: body.topics,
    });
    res.json({ ok: true });
  });
  // A seller's consent to the application: the token pair the authorization-code flow would give.
  controlRouter.post('/market/authorizations', (req, res) => {
    const body = parseControl(authorizationBody, req.body);
    if (!applications.has(body.client_id)) throw new ControlError(409, `no application ${body.client_id}`);
    if (body.nickname) nicknames.set(body.seller_id, body.nickname);
    let apps = authorized.get(body.seller_id);
    if (!apps) {
      apps = new Set();
      authorized.set(body.seller_id, apps);
    }
    apps.add(body.client_id);
    res.json(grant(body.client_id, body.seller_id));
  });
  // Every access token of the seller expires now (as six hours passing would); refresh tokens stay.
  controlRouter.post('/market/expire-tokens', (req, res) => {
    const { seller_id } = parseControl(expiryBody, req.body);
    let expired = 0;
    for (const token of accessTokens.values()) {
      if (token.sellerId === seller_id && token.expiresAt > Date.now()) {
        token.expiresAt = Date.now();
        expired++;
      }
    }
    res.json({ ok: true, expired });
  });
  // How often each refresh token was exchanged, so a test can see a single-use token spent once.
  controlRouter.get('/market/refreshes', (_req, res) => {
    res.json(
      [...refreshTokens].map(([token, state]) => ({
        refresh_token: token,
        seller_id: state.sellerId,
        spent: state.spent,
      })),
    );
  });

  /** A notification ML gave up on, kept for /missed_feeds as the documentation's example shows one. */
  function undelivered(
    _account: string,
    last: WebhookDelivery,
    answers: readonly (WebhookAnswer | undefined)[],
  ) {
    const sent = JSON.parse(String(last.body)) as Record<string, unknown> & {
      _id: string;
      application_id: number;
    };
    const answer = answers.at(-1);
    // request.data is the notification as first posted, without its _id.
    const { _id, ...first } = { ...sent, attempts: 1, sent: sent.received };
    const data = JSON.stringify(first);
    const entry = {
      _id,
      resource: sent.resource,
      user_id: sent.user_id,
      topic: sent.topic,
      application_id: sent.application_id,
      attempts: answers.length,
      sent: sent.sent,
      received: sent.received,
      request: {
        url: last.url,
        headers: {
          accept: 'application/json',
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(data),
        },
        data,
      },
      // The documentation's examples show the body as "[object Object]", whatever it was.
      response: answer
        ? {
            req_time: answer.elapsedMs ?? 0,
            http_code: answer.status,
            body: '[object Object]',
            headers: answer.headers ?? {},
          }
        : { req_time: 0, http_code: null, body: null, headers: {} },
    };
    const appId = String(sent.application_id);
    missed.set(appId, [...(missed.get(appId) ?? []), { lostAt: Date.now(), entry }]);
  }

  return {
    channel: CHANNEL,
    router,
    controlRouter,
    inboundDelivery,
    rateLimited,
    redelivery: mercadoLivreRedelivery,
    undelivered,
    reset: () => {
      missed.clear();
      applications.clear();
      accessTokens.clear();
      refreshTokens.clear();
      nicknames.clear();
      authorized.clear();
      questions.clear();
      messages.clear();
      packs.clear();
    },
    idle: async () => {
      while (pending.size > 0) await Promise.all([...pending]);
    },
  };
}
