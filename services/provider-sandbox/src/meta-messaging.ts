import { createHmac, randomBytes } from 'node:crypto';
import { type Request, type Response, Router } from 'express';
import type {
  AccountState,
  ChannelEmulator,
  ChannelFactory,
  InboundDelivery,
  InboundMessage,
  SandboxStores,
  StatusUpdate,
  WebhookDelivery,
  WebhookRegistration,
} from './channel-emulator.js';
import { ControlError } from './control-error.js';
import { answerFault } from './faults.js';
import {
  answerGraphError,
  endedToken,
  GraphCode,
  GraphError,
  invalidToken,
  requireAppSecretProof,
  type TokenEnding,
} from './graph-error.js';
import { inboundKinds } from './inbound-kinds.js';
import { IssuedMessages } from './issued-messages.js';
import { jsonBody } from './json-body.js';
import { Conversations, type Party } from './meta-conversations.js';
import { metaJson } from './meta-json.js';
import { metaAppControls } from './meta-messaging-controls.js';
import { MESSAGING_RETRY_WINDOW_MS, metaRedelivery } from './meta-redelivery.js';
import { randomDigits } from './provider-ids.js';

// Emulates the Messenger Platform (`social`) and Instagram Messaging (`photo`) on the Graph API, from
// Meta's docs: Messenger's send-api, webhooks and reference/webhook-events (messages, message_echoes,
// message_deliveries, message_reads, standby), subscribed_apps, error-codes, policy (standard messaging
// window, HUMAN_AGENT tag); Instagram's messaging-api and webhooks (instagram-api-with-instagram-login).

/** What tells the two products apart. */
export interface MetaProduct {
  channel: 'social' | 'photo';
  /** The webhooks' `object`. */
  object: 'page' | 'instagram';
  /** Messenger: "2000 characters"; Instagram: "1000 bytes" of UTF-8. */
  textLimit: { max: number; unit: 'characters' | 'bytes' };
  /** Messenger refuses a send without `messaging_type`; Instagram does not ask for it. */
  requiresMessagingType: boolean;
  /** The fields an account may subscribe the app to (the ones the sandbox knows). */
  fields: readonly string[];
  /** `error_subcode` of "(#10) This message is sent outside of allowed window." */
  windowSubcode: number;
  /** `error_subcode` of "(#100) No matching user found". */
  noUserSubcode: number;
  /** The product's rate-limit answer. */
  throttle: { code: number; title: string };
  /** Whether the product reports deliveries (`delivery.mids`) and how it reports reads. */
  deliveries: boolean;
  readsByMid: boolean;
  /**
   * Graph (graph.facebook.com) checks an `appsecret_proof` whenever a call carries one; Instagram Login's
   * graph.instagram.com documents none, so its calls are not checked.
   */
  checksAppSecretProof: boolean;
  /**
   * The account's node type, as Graph's errors name it. A Page has one id. An Instagram professional
   * account (User) has two: `user_id`, by which its webhooks name it, and the app-scoped `id` that `/me`
   * answers with (Meta's IG User reference; developers found entries naming `user_id` and `/me?fields=id`
   * the other).
   */
  nodeType: 'Page' | 'User';
  newMid(account: string): string;
}

const STANDARD_WINDOW_MS = 24 * 3_600_000;
/** The HUMAN_AGENT tag lets a person of the business answer for 7 days. */
const HUMAN_AGENT_WINDOW_MS = 7 * 24 * 3_600_000;
const MESSAGING_TYPES = ['RESPONSE', 'UPDATE', 'MESSAGE_TAG'];

/** What the business set on the button a postback tells of; the sandbox's buttons all carry this one. */
const POSTBACK_PAYLOAD = 'GET_STARTED';

/** The one app the sandbox pretends to be, as `subscribed_apps` lists it. */
export const SANDBOX_META_APP = { id: '670843887433847', name: 'Inbox sandbox app', category: 'Business' };

export const messenger: MetaProduct = {
  channel: 'social',
  object: 'page',
  textLimit: { max: 2000, unit: 'characters' },
  requiresMessagingType: true,
  fields: [
    'messages',
    'message_deliveries',
    'message_reads',
    'message_echoes',
    'messaging_postbacks',
    'message_reactions',
    'messaging_handovers',
    'standby',
  ],
  windowSubcode: 2018278,
  noUserSubcode: 2018001,
  throttle: { code: GraphCode.apiCallRateLimit, title: 'Calls to this api have exceeded the rate limit.' },
  deliveries: true,
  readsByMid: false,
  checksAppSecretProof: true,
  nodeType: 'Page',
  // Messenger's mids: `m_` and an opaque url-safe token.
  newMid: () => `m_${randomBytes(64).toString('base64url')}`,
};

export const instagram: MetaProduct = {
  channel: 'photo',
  object: 'instagram',
  textLimit: { max: 1000, unit: 'bytes' },
  requiresMessagingType: false,
  fields: [
    'messages',
    'messaging_seen',
    'messaging_postbacks',
    'message_reactions',
    'messaging_handover',
    'standby',
  ],
  windowSubcode: 2534022,
  noUserSubcode: 2534014,
  throttle: { code: GraphCode.applicationRequestLimit, title: 'Application request limit reached' },
  deliveries: false,
  readsByMid: true,
  checksAppSecretProof: false,
  nodeType: 'User',
  // Instagram's mids are base64 of `ig_message_item:1:IGMessageThread:<account>:<thread>:<item>`.
  newMid: (account) =>
    Buffer.from(
      `ig_message_item:1:IGMessageThread:${account}:${randomDigits(39)}:${randomDigits(38)}`,
    ).toString('base64'),
};

/** The app's callback for an account: the App Dashboard's Webhooks settings, which the sandbox keeps per account. */
export interface AppWebhook {
  url: string;
  verifyToken: string;
  appSecret: string;
}

/** One event of a batch the `/_sandbox/meta/batch` control sends. */
export interface BatchEvent {
  kind: 'message' | 'echo' | 'standby' | 'reaction' | 'delivery' | 'read';
  from: string;
  text?: string;
  mid?: string;
  /** The entry names another account of the same app. */
  account?: string;
}

/** A message the account sent: to whom, and when Meta took it (its time, which watermarks are made of). */
interface SentMessage {
  account: string;
  recipient: string;
  at: number;
}

export interface MetaMessagingState {
  product: MetaProduct;
  subscriptions: Map<string, string[]>;
  /**
   * By app (its secret stands for its id): the app's one callback URL, set in the App Dashboard. Meta
   * posts every subscribed account's events there, whichever integration's URL it is.
   */
  apps: Map<string, Omit<AppWebhook, 'appSecret'>>;
  /** By account: the app it is subscribed to (its secret). */
  appOfAccount: Map<string, string>;
  endedTokens: Map<string, { ending: TokenEnding; at: Date }>;
  /** Every mid the account sent, to whom (statuses name the user as sender), and when Meta took it. */
  sent: IssuedMessages<SentMessage>;
}

/** A refusal of a Send API parameter, worded as Graph words them. */
const badParam = (title: string, subcode?: number) =>
  new GraphError(400, GraphCode.invalidParameter, title, undefined, subcode === undefined ? {} : { subcode });

function bearerToken(req: Request): string | undefined {
  const header = req.headers.authorization;
  if (header?.startsWith('Bearer ')) return header.slice(7).trim() || undefined;
  const query = req.query.access_token;
  return typeof query === 'string' && query !== '' ? query : undefined;
}

function textFits(text: string, limit: MetaProduct['textLimit']): boolean {
  return (limit.unit === 'bytes' ? Buffer.byteLength(text, 'utf8') : text.length) <= limit.max;
}

function createMetaMessaging(product: MetaProduct): ChannelFactory {
  return (stores: SandboxStores, fetchImpl: typeof fetch): ChannelEmulator => {
    const { channel } = product;
    /** What the inbound control sends: a text message, or a tap on a postback button. */
    const kinds = inboundKinds(channel, ['text', 'postback']);
    const state: MetaMessagingState = {
      product,
      subscriptions: new Map(),
      apps: new Map(),
      appOfAccount: new Map(),
      endedTokens: new Map(),
      sent: new IssuedMessages(stores.sent.limit),
    };
    /** Every message between an account and its users, kept whatever became of its webhook. */
    const conversations = new Conversations(
      channel === 'social' ? 'messenger' : 'instagram',
      product.throttle,
    );
    /** A user or account as a conversation's message names it. */
    const party = (id: string, name: string): Party =>
      product.nodeType === 'Page'
        ? { name, email: `${id}@facebook.com`, id }
        : { username: name.toLowerCase().replaceAll(/[^a-z0-9_.]/g, '_'), id };
    const accountParty = (account: string) =>
      party(
        account,
        product.nodeType === 'Page' ? `Sandbox Page ${account.slice(-4)}` : `sandbox_${account.slice(-6)}`,
      );
    const userParty = (user: string, name?: string) => party(user, name ?? `Sandbox User ${user.slice(-4)}`);
    /** A user's message to the account, kept in their conversation. */
    const keepUserMessage = (account: string, user: string, mid: string, text: string, name?: string) =>
      conversations.record(account, user, {
        id: mid,
        from: userParty(user, name),
        to: accountParty(account),
        text,
      });
    /** The account each token was first seen for, so `/me` names it. */
    const accountOfToken = new Map<string, string>();
    /** An Instagram account's app-scoped id, made when first asked for, and the account each names. */
    const appScopedIds = new Map<string, string>();
    const accountOfAppScopedId = new Map<string, string>();
    function appScopedId(account: string): string {
      let id = appScopedIds.get(account);
      if (id === undefined) {
        // As Instagram's look: seventeen digits, unlike the account's `1784…`.
        id = `2${randomDigits(16)}`;
        appScopedIds.set(account, id);
        accountOfAppScopedId.set(id, account);
      }
      return id;
    }

    /** The node's account, its token checked: the one it was set up with, and not ended. */
    function authorise(req: Request<{ node: string }>): string {
      const token = bearerToken(req);
      if (!token) throw invalidToken();
      const node = req.params.node;
      // Either of an account's ids names its node.
      const account = node === 'me' ? accountOfToken.get(token) : (accountOfAppScopedId.get(node) ?? node);
      if (!account || !stores.credentials.accept(channel, account, token)) throw invalidToken();
      accountOfToken.set(token, account);
      const ended = state.endedTokens.get(account);
      if (ended) throw endedToken(ended.ending, ended.at);
      // Checked against the app the account is subscribed to, once the sandbox knows it (Meta always does).
      const proof = req.query.appsecret_proof;
      const appSecret = state.appOfAccount.get(account);
      if (product.checksAppSecretProof && proof !== undefined && appSecret !== undefined) {
        requireAppSecretProof(proof, appSecret, token);
      }
      return account;
    }

    const router = Router();
    router.use(jsonBody);
    // `/<version>/<node>/<edge>`: the node is the account's id or `me`.
    const path = (edge: string) => `/:version/:node/${edge}`;
    router.use('/:version', (req: Request<{ version: string }>, _res, next) => {
      // Versions are `v<major>.<minor>`; anything else is not a path Graph knows.
      next(
        /^v\d+\.\d+$/.test(req.params.version)
          ? undefined
          : new GraphError(400, GraphCode.unknownPath, `Unknown path components: /${req.params.version}`),
      );
    });

    router.post(path('messages'), (req: Request<{ node: string }>, res) => {
      const account = authorise(req);
      const fault = stores.faults.find(channel, account);
      if (fault) {
        answerFault(
          fault,
          res,
          (status) =>
            new GraphError(
              status,
              GraphCode.unexpectedError,
              'An unexpected error has occurred. Please retry your request later.',
            ).toBody(),
          stores.faultHoldMs,
          rateLimited,
        );
        return;
      }
      const body = (req.body && typeof req.body === 'object' ? req.body : {}) as Record<string, unknown>;
      const recipient = (body.recipient ?? {}) as Record<string, unknown>;
      const message = (body.message ?? {}) as Record<string, unknown>;
      if (typeof recipient.id !== 'string' || recipient.id === '')
        throw badParam('param recipient must be non-empty.');
      const type = body.messaging_type;
      if (type === undefined ? product.requiresMessagingType : !MESSAGING_TYPES.includes(String(type)))
        throw badParam('param messaging_type must be one of {RESPONSE, UPDATE, MESSAGE_TAG}');
      if (typeof message.text !== 'string' || message.text === '')
        throw badParam('param message must be non-empty.');
      if (!textFits(message.text, product.textLimit))
        throw badParam(
          `Length of param message[text] must be less than or equal to ${product.textLimit.max}`,
        );
      const lastInbound = stores.windows.lastInbound(channel, account, recipient.id);
      if (!lastInbound) throw badParam('No matching user found', product.noUserSubcode);
      const window =
        type === 'MESSAGE_TAG' && body.tag === 'HUMAN_AGENT' ? HUMAN_AGENT_WINDOW_MS : STANDARD_WINDOW_MS;
      if (Date.now() - lastInbound.getTime() >= window) {
        throw new GraphError(
          400,
          GraphCode.permissionDenied,
          'This message is sent outside of allowed window.',
          undefined,
          {
            subcode: product.windowSubcode,
          },
        );
      }
      const mid = product.newMid(account);
      state.sent.set(mid, { account, recipient: recipient.id, at: Date.now() });
      conversations.record(account, recipient.id, {
        id: mid,
        from: accountParty(account),
        to: userParty(recipient.id),
        text: message.text,
      });
      stores.sent.record({
        channel,
        account,
        to: recipient.id,
        method: req.method,
        path: `${req.baseUrl}${req.path}`,
        body,
        provider_message_id: mid,
        received_at: new Date().toISOString(),
      });
      res.json({ recipient_id: recipient.id, message_id: mid });
    });

    // subscribed_fields as Graph takes them: a comma list in the query or a form, or a JSON array.
    router.post(path('subscribed_apps'), (req: Request<{ node: string }>, res) => {
      const account = authorise(req);
      const given =
        (req.body as Record<string, unknown> | undefined)?.subscribed_fields ?? req.query.subscribed_fields;
      const fields = Array.isArray(given)
        ? given.map(String)
        : typeof given === 'string'
          ? given.split(',')
          : [];
      if (fields.length === 0) throw badParam('The parameter subscribed_fields is required.');
      const unknown = fields.filter((field) => !product.fields.includes(field));
      if (unknown.length > 0)
        throw badParam(
          `Param subscribed_fields must be one of {${product.fields.join(', ')}} - got "${unknown[0]}".`,
        );
      state.subscriptions.set(account, fields);
      res.json({ success: true });
    });

    router.get(path('subscribed_apps'), (req: Request<{ node: string }>, res) => {
      const fields = state.subscriptions.get(authorise(req));
      res.json({ data: fields ? [{ ...SANDBOX_META_APP, subscribed_fields: fields }] : [] });
    });

    router.delete(path('subscribed_apps'), (req: Request<{ node: string }>, res) => {
      state.subscriptions.delete(authorise(req));
      res.json({ success: true });
    });

    conversations.route(router, path('conversations'), authorise);

    // The account's node: `id` always, and the fields asked for that the node has.
    router.get('/:version/:node', (req: Request<{ node: string }>, res) => {
      const account = authorise(req);
      const known: Record<string, string> =
        product.nodeType === 'Page'
          ? { id: account, name: `Sandbox Page ${account.slice(-4)}` }
          : {
              id: appScopedId(account),
              user_id: account,
              username: `sandbox_${account.slice(-6)}`,
              name: `Sandbox ${account.slice(-4)}`,
            };
      const asked = typeof req.query.fields === 'string' ? req.query.fields.split(',').filter(Boolean) : [];
      const missing = asked.find((field) => !Object.hasOwn(known, field));
      if (missing !== undefined)
        throw new GraphError(
          400,
          GraphCode.invalidParameter,
          `Tried accessing nonexisting field (${missing}) on node type (${product.nodeType})`,
        );
      res.json(Object.fromEntries(['id', ...asked].map((field) => [field, known[field]])));
    });

    router.use((req, _res, next) => {
      next(new GraphError(400, GraphCode.unknownPath, `Unknown path components: ${req.path}`));
    });
    router.use(answerGraphError);

    function rateLimited(res: Response): void {
      const error = new GraphError(400, product.throttle.code, product.throttle.title);
      res.status(error.status).json(error.toBody());
    }

    /** Where the account's events go, signed with the app's secret; undefined when Meta would send them nowhere. */
    function notifier(account: string, field: string, appSecret?: string): AppWebhook | undefined {
      const secret = state.appOfAccount.get(account);
      const app = secret === undefined ? undefined : state.apps.get(secret);
      if (!secret || !app || !state.subscriptions.get(account)?.includes(field)) return undefined;
      return { ...app, appSecret: appSecret ?? secret };
    }

    /** One POST: the entries in Meta's escaped serialisation, signed over exactly those bytes. */
    function signed(to: AppWebhook, entries: unknown[]): WebhookDelivery {
      const body = metaJson({ object: product.object, entry: entries });
      const signature = createHmac('sha256', to.appSecret).update(body, 'utf8').digest('hex');
      return {
        url: to.url,
        headers: { 'Content-Type': 'application/json', 'X-Hub-Signature-256': `sha256=${signature}` },
        body,
      };
    }

    const entry = (account: string, events: unknown[], list: 'messaging' | 'standby' = 'messaging') => ({
      id: account,
      time: Date.now(),
      [list]: events,
    });

    /**
     * A tap on a postback button, Get Started or a persistent menu item (an Instagram ice breaker too),
     * sent on its own field, `messaging_postbacks`: the button's title, and the payload the business set.
     */
    function postback(account: string, from: string, title: string, mid: string) {
      return {
        sender: { id: from },
        recipient: { id: account },
        timestamp: Date.now(),
        postback: { mid, title, payload: POSTBACK_PAYLOAD },
      };
    }

    function userMessage(account: string, from: string, text: string, mid: string) {
      return {
        sender: { id: from },
        recipient: { id: account },
        timestamp: Date.now(),
        message: { mid, text },
      };
    }

    function inboundDelivery(message: InboundMessage): InboundDelivery | undefined {
      const kind = kinds.of(message.type);
      if (message.groupId !== undefined || message.addressingMode !== undefined)
        throw new ControlError(
          400,
          `${channel} has no groups nor addressing modes: users are named by their scoped id`,
        );
      const mid = product.newMid(message.account);
      // Meta keeps the message whether or not a webhook tells of it.
      if (kind !== 'postback')
        keepUserMessage(message.account, message.from, mid, message.text, message.name);
      const to = notifier(
        message.account,
        kind === 'postback' ? 'messaging_postbacks' : 'messages',
        message.appSecret,
      );
      if (!to) return undefined;
      // The webhook carries no name: `name` is not sent, as Meta sends none.
      const event =
        kind === 'postback'
          ? postback(message.account, message.from, message.text, mid)
          : userMessage(message.account, message.from, message.text, mid);
      return { ...signed(to, [entry(message.account, [event])]), providerMessageId: mid };
    }

    function statusDelivery(update: StatusUpdate): WebhookDelivery | undefined {
      const sent = state.sent.get(update.messageId);
      if (!sent || sent.account !== update.account)
        throw new ControlError(
          404,
          `${channel} account ${update.account} sent no message ${update.messageId}`,
        );
      const event = statusEvent(sent, update.status, update.messageId);
      const to = notifier(update.account, event.field, update.appSecret);
      return to && signed(to, [entry(update.account, [event.body])]);
    }

    // A watermark is the time Meta took the last message delivered or read, not the time of the event
    // (the reference's example: the event at …463, its watermark …253): messages up to it are covered.
    function statusEvent(sent: SentMessage, status: string, mid: string) {
      const parties = {
        sender: { id: sent.recipient },
        recipient: { id: sent.account },
        timestamp: Date.now(),
      };
      if (status === 'delivered' && product.deliveries)
        return {
          field: 'message_deliveries',
          body: { ...parties, delivery: { mids: [mid], watermark: sent.at } },
        };
      if (status === 'read')
        return product.readsByMid
          ? { field: 'messaging_seen', body: { ...parties, read: { mid } } }
          : { field: 'message_reads', body: { ...parties, read: { watermark: sent.at } } };
      throw new ControlError(400, `${channel} reports no "${status}" status by webhook`);
    }

    /** The events of a batch, each in its own entry as Meta batches them, in one signed POST. */
    function batchDelivery(account: string, events: BatchEvent[], appSecret?: string) {
      const to = notifier(account, 'messages', appSecret);
      if (!to) return undefined;
      const mids: string[] = [];
      const entries = events.map((event) => {
        const owner = event.account ?? account;
        const mid = event.mid ?? product.newMid(owner);
        mids.push(mid);
        const text = event.text ?? 'oi';
        switch (event.kind) {
          case 'message':
            if (owner === account) stores.windows.open(channel, account, event.from);
            keepUserMessage(owner, event.from, mid, text);
            return entry(owner, [userMessage(owner, event.from, text, mid)]);
          case 'standby':
            // Another app owns the thread: the customer wrote, and we may only watch.
            return entry(owner, [userMessage(owner, event.from, text, mid)], 'standby');
          case 'echo':
            return entry(owner, [
              {
                sender: { id: owner },
                recipient: { id: event.from },
                timestamp: Date.now(),
                message: { mid, is_echo: true, app_id: Number(SANDBOX_META_APP.id), text },
              },
            ]);
          case 'reaction':
            return entry(owner, [
              {
                sender: { id: event.from },
                recipient: { id: owner },
                timestamp: Date.now(),
                reaction: { mid, action: 'react', reaction: 'love', emoji: '\u2764\ufe0f' },
              },
            ]);
          default: {
            const sent = state.sent.get(mid) ?? { account: owner, recipient: event.from, at: Date.now() };
            return entry(owner, [
              statusEvent(sent, event.kind === 'delivery' ? 'delivered' : 'read', mid).body,
            ]);
          }
        }
      });
      return { delivery: signed(to, entries), mids };
    }

    function setAccountState(account: string, accountState: AccountState): void {
      // A Page or Instagram account is reached through its token: it is expired or its user logged out.
      if (accountState === 'connected') state.endedTokens.delete(account);
      else
        state.endedTokens.set(account, {
          ending: accountState === 'logged_out' ? 'logged_out' : 'expired',
          at: new Date(),
        });
    }

    function webhooks(account?: string): WebhookRegistration[] {
      return [...state.appOfAccount].flatMap(([id, secret]) => {
        const fields = state.subscriptions.get(id);
        const app = state.apps.get(secret);
        return fields && app && (account === undefined || id === account)
          ? [{ channel, account: id, url: app.url, headers: {}, events: fields }]
          : [];
      });
    }

    return {
      channel,
      router,
      controlRouter: metaAppControls({ stores, state, fetchImpl, batchDelivery }),
      inboundDelivery,
      statusDelivery,
      setAccountState,
      webhooks,
      rateLimited,
      redelivery: metaRedelivery(MESSAGING_RETRY_WINDOW_MS),
      // Failing for an hour, the app is unsubscribed from the account: nothing more is posted for it
      // until the app subscribes again (POST subscribed_apps).
      undelivered(account) {
        state.subscriptions.delete(account);
      },
      reset() {
        state.subscriptions.clear();
        state.apps.clear();
        state.appOfAccount.clear();
        state.endedTokens.clear();
        state.sent.clear();
        conversations.clear();
        accountOfToken.clear();
        appScopedIds.clear();
        accountOfAppScopedId.clear();
      },
    };
  };
}

export const createSocial = createMetaMessaging(messenger);
export const createPhoto = createMetaMessaging(instagram);
