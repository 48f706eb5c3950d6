import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { AppError, type ChannelConfig, platformTexts } from '@inbox/contracts';
import { z } from 'zod';
import {
  type ChannelAdapter,
  type InboundBatch,
  type InboundMessage,
  InboundRejected,
  type ProviderCall,
  ProviderError,
  type ProviderRefusal,
  providerWords,
  type StatusUpdate,
  type Watermark,
} from './channel-adapter.js';
import { callProvider, joinUrl, type ProviderAnswer } from './http.js';
import { locationText, type SharedPlace } from './location-text.js';
import {
  appSecretProof,
  GRAPH_TOKEN_INVALID,
  GraphErrorBody,
  graphThrottleCodes,
  hubChallengeAnswer,
  hubSignatureMatches,
  refusesAppSecret,
} from './meta-graph.js';
import { valueAt } from './text-at.js';

// Messenger and Instagram Messaging are one platform on the Graph API: the same Send API answer
// (`{recipient_id, message_id}`), the same webhook (`entry[].messaging[]` events, signed, verified by
// hub.challenge), the same 24-hour standard messaging window. Facts from Meta's Messenger Platform docs
// (send-api, webhooks, reference/webhook-events/{messages,message-deliveries,message-reads,
// message-echoes}, handover-protocol "standby", error-codes) and Instagram Platform docs
// (instagram-api-with-instagram-login/messaging-api, webhooks).

export type MetaMessagingChannel = 'social' | 'photo';

/** The Graph version the Send API calls name; the webhooks carry no version. */
export const META_GRAPH_VERSION = 'v21.0';

/** What tells the two products apart. */
export interface MetaMessagingProduct<K extends MetaMessagingChannel> {
  channel: K;
  /** The webhooks' `object`: `page` for Messenger, `instagram` for Instagram. */
  object: 'page' | 'instagram';
  /** The Page or Instagram professional account that sends and receives. */
  account(config: ChannelConfig<K>): string;
  token(config: ChannelConfig<K>): string;
  /** The Send API's text limit, and how it is counted. */
  textLimit: { max: number; unit: 'characters' | 'bytes' };
  /** Messenger wants `messaging_type` on every send; Instagram's Send API takes no such field. */
  messagingType: boolean;
  /** The webhook fields subscribed: messages and what tells of our messages' delivery and reading. */
  subscribedFields: readonly string[];
  /** The `error_subcode` of code 10 that says the standard messaging window is closed. */
  windowSubcode: number;
  /** The product's own rate-limit code on top of Graph's (Business Use Case limits). */
  throttleCode: number;
  /**
   * Its calls carry `appsecret_proof` (see `appSecretProof`): Graph's, Messenger's, do; Instagram Login's
   * graph.instagram.com documents none.
   */
  appSecretProof: boolean;
  /**
   * Where the account's node has an id other than the one its webhooks name it by: that field, and the
   * config key that must hold it. An Instagram professional account is `user_id` in every webhook
   * entry, and its app-scoped `id` is what `/me` answers with (Meta's IG User reference); an integration
   * keyed by the `id` took no message in.
   */
  webhookAccount?: { field: 'user_id'; configKey: string };
  /**
   * The Conversations API's pace: "Your app can make 2 calls per second per Facebook Page" (and per
   * Instagram professional account; Messenger Platform, rate limits).
   */
  conversationsPerSecond: number;
}

/** An account's node as `GET /<node>?fields=…` answers, ids as strings (Graph's ids outgrow a JSON number). */
const AccountNode = z.object({ user_id: z.string().optional() });
const AccountId = z.object({ id: z.string().min(1).max(100) });

/** GET /{account}/subscribed_apps: the apps the account is subscribed to, each with its fields. */
const SubscribedApps = z.object({
  data: z.array(z.object({ subscribed_fields: z.array(z.string().max(100)).max(100).optional() })).max(100),
});

/**
 * GET /{account}/conversations with each conversation's latest messages expanded (the Conversations API:
 * the most recently updated first, times as Graph writes them, `2019-01-10T11:18:46+0000`), as far as it
 * is read here.
 */
const ConversationsPage = z.object({
  data: z
    .array(
      z.object({
        updated_time: z.string().max(40).optional(),
        messages: z
          .object({
            data: z
              .array(
                z.object({
                  id: z.string().min(1).max(1_000),
                  created_time: z.string().max(40),
                  from: z
                    .object({ id: z.string().min(1).max(100), name: z.string().max(1_000).optional() })
                    .optional(),
                  message: z.string().optional(),
                }),
              )
              .max(100),
          })
          .optional(),
      }),
    )
    .max(100),
  paging: z
    .object({
      cursors: z.object({ after: z.string().max(1_000).optional() }).optional(),
      next: z.string().optional(),
    })
    .optional(),
});

/** Graph's datetime (`+0000`, no colon) as a Date; undefined when it is none. */
function graphDate(text: string | undefined): Date | undefined {
  if (text === undefined) return undefined;
  const date = new Date(text.replace(/([+-]\d\d)(\d\d)$/, '$1:$2'));
  return Number.isNaN(date.getTime()) ? undefined : date;
}

/**
 * What one read of the account's conversations goes through at most: its tenant's `base_url` answers, so
 * a page of conversations each full of messages, or endless pages, bound what one read takes in. The
 * pages are paced to the product's calls a second, counted from each answer: a read that went faster is
 * throttled at the same page every time, and would never end.
 */
const conversationPages = 40;
const conversationsPerPage = 25;
const conversationMessages = 2_000;
/** "You can only get details about the 20 most recent messages in the conversation." */
const detailedMessages = 20;
/** Over the pace's gap, so that a timer a millisecond early is not a call too soon. */
const paceMarginMs = 20;
/**
 * A page throttled all the same (another reader of the account) is asked for again, a second later: only
 * for the calls-a-second limits' codes (613, and Instagram's 4), not the Business Use Case or Page limits,
 * which last minutes to an hour.
 */
const throttledRetries = 3;
const pacedThrottleCodes: ReadonlySet<number> = new Set([4, 613]);

const SendAnswer = z.object({ recipient_id: z.string().optional(), message_id: z.string().min(1) });

const Party = z.object({ id: z.string().min(1) });

const Attachment = z.object({ type: z.string() }).passthrough();

/** One `messaging[]` event: exactly one of message, delivery, read, reaction, postback... */
const MessagingEvent = z.object({
  sender: Party,
  recipient: Party,
  timestamp: z.number().optional(),
  message: z
    .object({
      mid: z.string().min(1),
      text: z.string().optional(),
      is_echo: z.boolean().optional(),
      is_deleted: z.boolean().optional(),
      is_unsupported: z.boolean().optional(),
      attachments: z.array(Attachment).optional(),
    })
    .optional(),
  // A tap on a postback button, the Get Started button, a persistent menu item or an Instagram ice
  // breaker (reference/webhook-events/messaging_postbacks): `title` the label the person saw, `payload`
  // what the business set on it; older events carry no `mid`.
  postback: z
    .object({
      mid: z.string().min(1).optional(),
      title: z.string().optional(),
      payload: z.string().optional(),
    })
    .optional(),
  delivery: z.object({ mids: z.array(z.string()).optional(), watermark: z.number().optional() }).optional(),
  read: z.object({ mid: z.string().optional(), watermark: z.number().optional() }).optional(),
});
type MessagingEvent = z.infer<typeof MessagingEvent>;

/**
 * Meta batches: one POST may carry several entries, each several events. `standby` holds the events of
 * conversations another app owns (handover protocol): ours to see, never to answer, so never read.
 */
const Envelope = z.object({
  object: z.string(),
  entry: z.array(
    z.object({
      id: z.string(),
      messaging: z.array(z.unknown()).optional(),
      standby: z.array(z.unknown()).optional(),
    }),
  ),
});

const attachmentTypes: Record<string, InboundMessage['type']> = {
  image: 'image',
  audio: 'audio',
  video: 'video',
  file: 'document',
  location: 'location',
};

/** Messenger's location attachment: `{ title, payload: { coordinates: { lat, long } } }`. */
const sharedPlace = (attachment: z.infer<typeof Attachment>): SharedPlace => ({
  name: attachment.title,
  latitude: valueAt(attachment, 'payload', 'coordinates', 'lat'),
  longitude: valueAt(attachment, 'payload', 'coordinates', 'long'),
});

function content(message: NonNullable<MessagingEvent['message']>): Pick<InboundMessage, 'text' | 'type'> {
  const first = message.attachments?.[0];
  if (message.text !== undefined && !first) return { text: message.text, type: 'text' };
  // Stickers and likes come as images; shares, story mentions, reels and the rest as what they are.
  const type = first ? (attachmentTypes[first.type] ?? 'others') : 'others';
  if (type === 'location') return { text: locationText(sharedPlace(first!)), type };
  return { text: message.text ?? '', type };
}

function textFits(text: string, limit: MetaMessagingProduct<MetaMessagingChannel>['textLimit']): boolean {
  return (limit.unit === 'bytes' ? Buffer.byteLength(text, 'utf8') : text.length) <= limit.max;
}

/** A Graph refusal, mapped; the provider's words stay in our records, never in the caller's answer. */
export function metaMessagingFailure(
  product: Pick<MetaMessagingProduct<MetaMessagingChannel>, 'channel' | 'windowSubcode' | 'throttleCode'>,
  operation: string,
  answer: ProviderAnswer,
): Error {
  const parsed = GraphErrorBody.safeParse(answer.body);
  if (!parsed.success)
    return new ProviderError(`${product.channel} answered ${answer.status} to ${operation}`, answer.status);
  const { code, error_subcode: subcode, message } = parsed.data.error;
  const detail = providerWords(
    `${product.channel} error ${code}${subcode === undefined ? '' : `/${subcode}`} to ${operation}: ${message ?? ''}`,
  );
  if (code === 10 && subcode === product.windowSubcode) {
    return new AppError(400, { error: platformTexts.replyWindowClosed(product.channel) }, { detail });
  }
  let refusal: ProviderRefusal | undefined;
  if (code === GRAPH_TOKEN_INVALID || refusesAppSecret(code, message)) refusal = 'credentials_rejected';
  else if (graphThrottleCodes.has(code) || code === product.throttleCode) refusal = 'rate_limited';
  return new ProviderError(detail, answer.status, code, refusal ? { refusal } : undefined);
}

/** The events of one batch that are a customer's messages to this account, or news of ours. */
function readEvents(account: string, events: MessagingEvent[]): InboundBatch {
  const batch: InboundBatch = { messages: [], statuses: [], watermarks: [], unreadable: [] };
  for (const event of events) {
    // Echoes (our own sends, or the Page's from its inbox) come from the account to the customer.
    if (event.message?.is_echo || event.recipient.id !== account) continue;
    const at = event.timestamp === undefined ? undefined : new Date(event.timestamp);
    if (event.message) {
      if (event.message.is_deleted) continue; // Instagram's "unsend": the message is gone.
      batch.messages.push({
        providerMessageId: event.message.mid,
        from: event.sender.id,
        keyedBy: 'user_id',
        // The webhook carries no name: the user's profile is a separate call, with its own permission.
        name: null,
        ...content(event.message),
        sentAt: at ?? new Date(),
      });
    }
    // The person answering with the button's label, as a tap on a WhatsApp button is; often their first
    // word (Get Started), and it opens the messaging window as a message does. The payload is the
    // business's code, not the person's words. Meta redelivers the same event, so one without a mid is
    // named by what it says.
    if (event.postback) {
      const { mid, title } = event.postback;
      batch.messages.push({
        providerMessageId:
          mid ?? `postback:${createHash('sha256').update(JSON.stringify(event)).digest('hex')}`,
        from: event.sender.id,
        keyedBy: 'user_id',
        name: null,
        ...(title ? { text: title, type: 'text' as const } : { text: '', type: 'others' as const }),
        sentAt: at ?? new Date(),
      });
    }
    // A delivery's mids "may not be present": its watermark then says what was delivered.
    const delivered = event.delivery?.mids ?? [];
    for (const mid of delivered) batch.statuses.push(status(mid, 'delivered', at));
    if (event.delivery?.watermark !== undefined && delivered.length === 0)
      batch.watermarks!.push(watermark(event.sender.id, 'delivered', event.delivery.watermark));
    // Messenger's read names only a watermark (everything sent up to it was read); Instagram's names the mid.
    if (event.read?.mid) batch.statuses.push(status(event.read.mid, 'read', at));
    else if (event.read?.watermark !== undefined)
      batch.watermarks!.push(watermark(event.sender.id, 'read', event.read.watermark));
  }
  return batch;
}

const watermark = (userId: string, value: Watermark['status'], upTo: number): Watermark => ({
  userId,
  status: value,
  upTo: new Date(upTo),
});

const status = (
  providerMessageId: string,
  value: StatusUpdate['status'],
  at: Date | undefined,
): StatusUpdate => ({
  providerMessageId,
  status: value,
  error: null,
  ...(at ? { at } : {}),
});

/** One adapter for either product: the same calls and callbacks, with the product's account, token and limits. */
export function metaMessagingAdapter<K extends MetaMessagingChannel>(
  product: MetaMessagingProduct<K>,
): ChannelAdapter<K> {
  /** The account's node, or one of its edges, with the proof the product's calls carry. */
  const graph = (config: ChannelConfig<K>, edge?: string) => {
    const node = `${META_GRAPH_VERSION}/${encodeURIComponent(product.account(config))}`;
    const url = joinUrl(config.base_url, edge === undefined ? node : `${node}/${edge}`);
    if (product.appSecretProof)
      url.searchParams.set('appsecret_proof', appSecretProof(config.app_secret, product.token(config)));
    return url;
  };
  const bearer = (config: ChannelConfig<K>) => ({ authorization: `Bearer ${product.token(config)}` });

  async function post(config: ChannelConfig<K>, url: URL, body: unknown, call: ProviderCall) {
    const answer = await callProvider(call, product.channel, url, {
      method: 'POST',
      headers: bearer(config),
      body,
    });
    if (!answer.ok) throw metaMessagingFailure(product, url.pathname.split('/').at(-1) ?? '', answer);
    return answer;
  }

  /**
   * The account's other id, where its node has one apart from the one its webhooks name it by (an
   * Instagram account's app-scoped `id`): a conversation may name the account by either, and its own
   * messages are not a user's.
   */
  async function otherAccountIds(config: ChannelConfig<K>, call: ProviderCall): Promise<string[]> {
    if (!product.webhookAccount) return [];
    const url = graph(config);
    url.searchParams.set('fields', 'id');
    const answer = await callProvider(call, product.channel, url, { method: 'GET', headers: bearer(config) });
    if (!answer.ok) throw metaMessagingFailure(product, 'account', answer);
    const id = AccountId.safeParse(answer.body).data?.id;
    return id === undefined ? [] : [id];
  }

  /**
   * The users' messages since `since`, from the Conversations API: conversations newest first, each with
   * its 20 latest messages (Meta details no more), until one last updated before `since`. A
   * conversation with more than 20 messages since then gives its latest 20; the account's own messages
   * and echoes are left out, and one with no text (an attachment: the API gives its URL apart) is noted
   * as unreadable.
   */
  async function* conversationsSince(
    config: ChannelConfig<K>,
    call: ProviderCall,
    since: Date,
  ): AsyncGenerator<InboundBatch> {
    const own = new Set([product.account(config), ...(await otherAccountIds(config, call))]);
    const gapMs = 1_000 / product.conversationsPerSecond + paceMarginMs;
    let answeredAt = Number.NEGATIVE_INFINITY;
    const conversationsCall = async (url: URL): Promise<ProviderAnswer> => {
      for (let throttled = 0; ; throttled++) {
        const wait = answeredAt + gapMs - performance.now();
        if (wait > 0) await sleep(wait, undefined, { signal: call.signal });
        const answer = await callProvider(call, product.channel, url, {
          method: 'GET',
          headers: bearer(config),
        });
        answeredAt = performance.now();
        if (answer.ok) return answer;
        const failure = metaMessagingFailure(product, 'conversations', answer);
        if (
          throttled >= throttledRetries ||
          !(failure instanceof ProviderError) ||
          !pacedThrottleCodes.has(failure.providerCode ?? 0)
        )
          throw failure;
        await sleep(1_000, undefined, { signal: call.signal });
      }
    };
    let after: string | undefined;
    let read = 0;
    for (let page = 0; page < conversationPages; page++) {
      const url = graph(config, 'conversations');
      url.searchParams.set('platform', product.object === 'page' ? 'messenger' : 'instagram');
      url.searchParams.set(
        'fields',
        `id,updated_time,messages.limit(${detailedMessages}){id,created_time,from,message}`,
      );
      url.searchParams.set('limit', String(conversationsPerPage));
      if (after !== undefined) url.searchParams.set('after', after);
      const answer = await conversationsCall(url);
      const listed = ConversationsPage.safeParse(answer.body);
      if (!listed.success) throw new ProviderError(`${product.channel} answered conversations without data`);
      const batch: InboundBatch = { messages: [], statuses: [], unreadable: [] };
      let reachedSince = false;
      for (const conversation of listed.data.data) {
        const updated = graphDate(conversation.updated_time);
        if (updated && updated < since) {
          reachedSince = true;
          break;
        }
        // Newest first, as Meta lists them: each is taken in in the order it was sent (to the second).
        for (const message of [...(conversation.messages?.data ?? [])].reverse()) {
          const sentAt = graphDate(message.created_time);
          if (!sentAt || sentAt < since || !message.from || own.has(message.from.id)) continue;
          if (read++ >= conversationMessages) break;
          if (message.message)
            batch.messages.push({
              providerMessageId: message.id,
              from: message.from.id,
              keyedBy: 'user_id',
              name: message.from.name ?? null,
              text: message.message,
              type: 'text',
              sentAt,
            });
          else
            batch.unreadable!.push({
              providerMessageId: message.id,
              reason: `${product.channel} message without text, read back from the Conversations API: its attachment is not read there`,
            });
        }
      }
      if (batch.messages.length > 0 || batch.unreadable!.length > 0) yield batch;
      after = listed.data.paging?.next === undefined ? undefined : listed.data.paging.cursors?.after;
      if (reachedSince || after === undefined || read >= conversationMessages) return;
    }
  }

  /**
   * Refuses a config whose account is not named as the account's webhooks name it (`webhookAccount`),
   * saying which id they use: read off the configured node, which the token may read. A node without
   * the field (another setup's) is left as configured.
   */
  async function requireWebhookAccountId(config: ChannelConfig<K>, call: ProviderCall) {
    if (!product.webhookAccount) return;
    const { field, configKey } = product.webhookAccount;
    const url = graph(config);
    url.searchParams.set('fields', field);
    const answer = await callProvider(call, product.channel, url, { method: 'GET', headers: bearer(config) });
    if (!answer.ok) throw metaMessagingFailure(product, 'account', answer);
    const named = AccountNode.safeParse(answer.body).data?.[field];
    if (named !== undefined && named !== product.account(config))
      throw AppError.badRequest(
        platformTexts.configAccountNotAsNotified(product.channel, configKey, field, named),
      );
  }

  const adapter = {
    channel: product.channel,

    async sendText(config: ChannelConfig<K>, message: { to: string; text: string }, call: ProviderCall) {
      if (!textFits(message.text, product.textLimit)) {
        const limit = `${product.textLimit.max} ${product.textLimit.unit === 'bytes' ? 'bytes em UTF-8' : 'caracteres'}`;
        throw AppError.badRequest(platformTexts.textTooLongForChannel(product.channel, limit));
      }
      // The customer's page- or Instagram-scoped id (PSID / IGSID): what the contact is keyed by.
      if (!/^\d+$/.test(message.to))
        throw new ProviderError(`${product.channel}: ${message.to} is not a Meta user id`);
      const answer = await post(
        config,
        graph(config, 'messages'),
        {
          recipient: { id: message.to },
          // A reply within the standard messaging window.
          ...(product.messagingType ? { messaging_type: 'RESPONSE' } : {}),
          message: { text: message.text },
        },
        call,
      );
      const sent = SendAnswer.safeParse(answer.body);
      if (!sent.success)
        throw new ProviderError(`${product.channel} answered the send without a message_id`, answer.status);
      return { providerMessageId: sent.data.message_id };
    },

    /**
     * Subscribes the account to the app, for the fields we read. The callback URL itself is the app's
     * (set once in the App Dashboard, or by the app's own token), which no account token may change: the
     * operator sets it to this integration's callback URL, and Meta checks it with hub.challenge.
     */
    // The account is subscribed to the app here; the app's callback URL is set in Meta's App Dashboard
    // (a Page token cannot set it), so the integration's answer says what to set there.
    async registerInbound(config: ChannelConfig<K>, callbackUrl: string, call: ProviderCall) {
      await requireWebhookAccountId(config, call);
      const url = graph(config, 'subscribed_apps');
      url.searchParams.set('subscribed_fields', product.subscribedFields.join(','));
      await post(config, url, undefined, call);
      return { manual: { url: callbackUrl, topics: [...product.subscribedFields] } };
    },

    /**
     * Whether the account is still subscribed to the app for every field we read: Meta unsubscribes an
     * app whose webhooks fail for an hour. The account's list names no app as ours (the config has no
     * app id), so an entry with every field is taken for ours.
     */
    async callbackSubscribed(config: ChannelConfig<K>, call: ProviderCall) {
      const url = graph(config, 'subscribed_apps');
      const answer = await callProvider(call, product.channel, url, {
        method: 'GET',
        headers: bearer(config),
      });
      if (!answer.ok) throw metaMessagingFailure(product, 'subscribed_apps', answer);
      const listed = SubscribedApps.safeParse(answer.body);
      if (!listed.success)
        throw new ProviderError(`${product.channel} answered subscribed_apps without data`);
      return listed.data.data.some((app) =>
        product.subscribedFields.every((field) => app.subscribed_fields?.includes(field)),
      );
    },

    messagesSince(config: ChannelConfig<K>, call: ProviderCall, since: Date): AsyncIterable<InboundBatch> {
      return conversationsSince(config, call, since);
    },

    // Meta calls only HTTPS endpoints with a valid certificate.
    callbackUrlRules: { httpsOnly: true },

    answerHandshake: (config: ChannelConfig<K>, query: Record<string, unknown>) =>
      hubChallengeAnswer(config.verify_token, query),

    readInbound(
      config: ChannelConfig<K>,
      request: { headers: Record<string, string | string[] | undefined>; rawBody: Buffer },
    ) {
      if (!hubSignatureMatches(config.app_secret, request.rawBody, request.headers)) {
        throw new InboundRejected('X-Hub-Signature-256 does not match');
      }
      const envelope = Envelope.safeParse(JSON.parse(request.rawBody.toString('utf8')));
      if (!envelope.success) return { messages: [], statuses: [] };
      // Signed by the app, but about the other product: not this integration's.
      if (envelope.data.object !== product.object) {
        throw new InboundRejected(`${product.channel} callback of object "${envelope.data.object}"`);
      }
      const account = product.account(config);
      // An app subscribed to several accounts sends them all to its one callback URL: each account's
      // events are read for it, and the connector takes the others in for their own integrations.
      const byAccount = new Map<string, MessagingEvent[]>();
      for (const entry of envelope.data.entry) {
        const events = byAccount.get(entry.id) ?? [];
        for (const raw of entry.messaging ?? []) {
          const event = MessagingEvent.safeParse(raw);
          if (event.success) events.push(event.data);
        }
        byAccount.set(entry.id, events);
      }
      const own = readEvents(account, byAccount.get(account) ?? []);
      const elsewhere = [...byAccount]
        .filter(([id]) => id !== account)
        .map(([id, events]) => ({ account: id, batch: readEvents(id, events) }))
        .filter(({ batch }) => batch.messages.length + batch.statuses.length + batch.watermarks!.length > 0);
      return elsewhere.length > 0 ? { ...own, elsewhere } : own;
    },
  };
  return adapter as ChannelAdapter<K>;
}
