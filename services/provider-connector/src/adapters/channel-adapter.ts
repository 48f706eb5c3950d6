import type { ChannelConfig, IntegrationChannel, TemplateChannel, TemplateSend } from '@inbox/contracts';
import { storableText } from '@inbox/db';
import type { OutboundGuard } from '@inbox/outbound-http';
import type { Logger } from '@inbox/service-kit';

export interface OutboundText {
  /**
   * Recipient in E.164 without the `+`, as providers take it; on channels without phone numbers, the
   * provider's user id of the contact (for the bot channel, the private chat's id).
   */
  to: string;
  text: string;
}

/** What a provider's callback carried, once verified: new messages and status changes. */
export interface InboundBatch {
  messages: InboundMessage[];
  statuses: StatusUpdate[];
  /** Statuses that name no message, only a user and a time (Messenger's reads, and its deliveries without ids). */
  watermarks?: Watermark[];
  /** A contact's message that cannot be taken in (e.g. no number to key its contact by), and why. */
  unreadable?: Array<{ providerMessageId: string; reason: string }>;
  /**
   * Resources a verified notification names instead of carrying the message (Mercado Livre's): the
   * connector fetches each with the integration's credentials (`resolveInbound`), and only what that
   * fetch answers is taken in.
   */
  toFetch?: NotifiedResource[];
  /**
   * What a verified callback carried for other accounts of the same provider app: Meta sends every
   * account's events to the app's one callback URL, whichever integration's URL that is. The connector
   * takes each in for that account's integrations that share this one's app secret.
   */
  elsewhere?: Array<{ account: string; batch: InboundBatch }>;
}

/** A resource a provider's notification names: its topic and path, as the notification gives them. */
export interface NotifiedResource {
  topic: string;
  resource: string;
}

/** What a reply to the sender must answer, on providers whose replies go to a thread (a question, a sale). */
export interface ReplyContext {
  kind: 'question' | 'pack';
  id: string;
}

export interface InboundMessage {
  providerMessageId: string;
  /**
   * Sender's number, digits only; on channels without phone numbers (`keyedBy: 'user_id'`), the
   * provider's user id of the sender.
   */
  from: string;
  /** How `from` names the sender: a phone number (the default) or the provider's user id. */
  keyedBy?: 'phone' | 'user_id';
  /**
   * The provider's user id of a sender `from` names by number, where the provider gives both (the Cloud
   * API's business-scoped user id, a LID on alt-a and alt-b), written as a message keyed by it alone names
   * the sender: noted on the contact, so that such a later message (the number hidden) reaches it.
   */
  userId?: string;
  name: string | null;
  text: string;
  type: 'text' | 'image' | 'audio' | 'video' | 'document' | 'location' | 'others';
  sentAt: Date;
  /** Where a reply to this sender goes, kept per (integration, sender) when the message is taken in. */
  replyContext?: ReplyContext;
}

export interface StatusUpdate {
  providerMessageId: string;
  status: 'sent' | 'delivered' | 'read' | 'failed';
  error: string | null;
  /** The provider's error code of a failure, where it has codes. */
  errorCode?: number | null;
  /** When the provider says the status changed. */
  at?: Date;
  /** Our message id, where the provider echoes the reference we sent with the message. */
  ourMessageId?: string;
}

/** Every message sent to `userId` up to `upTo` (the provider's time) was delivered or read. */
export interface Watermark {
  userId: string;
  status: 'delivered' | 'read';
  upTo: Date;
}

export interface InboundRequest {
  headers: Record<string, string | string[] | undefined>;
  /** The callback URL's query, where providers that send no credential repeat the secret we registered. */
  query?: Record<string, unknown>;
  /** The body exactly as received: signatures are computed over these bytes. */
  rawBody: Buffer;
}

/** A callback that is not the provider's: wrong signature or token. */
export class InboundRejected extends Error {
  override name = 'InboundRejected';
}

/** What a provider call needs besides the integration's config. */
export interface ProviderCall {
  /** The connector's address policy and client: every provider request goes through it. */
  guard: OutboundGuard;
  /** The workspace the call is made for: its lookups take that workspace's turn (HostResolver). */
  workspaceId: string;
  /** The operation's deadline. */
  signal: AbortSignal;
  logger: Logger;
  /** Where a channel without a third party (live chat) hands an operator's message to its visitor. */
  visitors?: VisitorDelivery;
  /** The integration's OAuth tokens, for providers whose access tokens expire and rotate. */
  oauth?: OAuthTokens;
  /** Where replies to a sender go, for providers whose replies answer a thread. */
  replyContexts?: ReplyContexts;
  /**
   * Our id of the message a send call sends, for providers that echo a reference of ours in their
   * status callbacks: a send whose answer was lost is then known by its first status.
   */
  messageId?: string;
}

/** A rotated pair, as the provider's token endpoint answers it. */
export interface TokenGrant {
  accessToken: string;
  refreshToken: string;
  /** Seconds the access token lives. */
  expiresIn: number;
}

/**
 * Spends a refresh token at the provider's token endpoint. The signal is the refresh's own bound, not
 * any one call's deadline: calls share a refresh, and a pair the provider issued must be kept.
 */
export type RefreshGrant = (refreshToken: string, signal: AbortSignal) => Promise<TokenGrant>;

/**
 * One integration's OAuth tokens as stored (sealed with its config). Refreshes are serialised across
 * replicas, so a single-use refresh token is spent once; a replica that waited takes the pair the
 * other one stored.
 */
export interface OAuthTokens {
  /** The access token to use now, refreshed first when it expires within the margin. */
  current(refresh: RefreshGrant): Promise<string>;
  /** A fresh access token after the provider refused `rejected`; refreshed unless another replica did. */
  renew(rejected: string, refresh: RefreshGrant): Promise<string>;
}

/** The reply contexts of one integration's senders. */
export interface ReplyContexts {
  latest(senderId: string): Promise<{ questionId: string | null; packId: string | null } | undefined>;
  /** The question was answered: a later reply goes to the sender's sale, if any. */
  answered(senderId: string, questionId: string): Promise<void>;
}

/**
 * Stores the message being sent for a live chat visitor and wakes the streams that show it; bound to
 * the integration and the message, so a repeated send stores it once.
 */
export interface VisitorDelivery {
  deliver(sessionId: string, text: string): Promise<{ providerMessageId: string }>;
}

/** What the connector asks of a provider, on an integration's config `C`. */
export interface ProviderOperations<C> {
  sendText(config: C, message: OutboundText, call: ProviderCall): Promise<{ providerMessageId: string }>;
  /**
   * Tells the provider where to deliver inbound messages for this account. A provider that takes its
   * callback URL only from a person (a developer console) answers what that person must set instead.
   */
  // biome-ignore lint/suspicious/noConfusingVoidType: adapters that register by API resolve to nothing.
  registerInbound(config: C, callbackUrl: string, call: ProviderCall): Promise<void | ManualRegistration>;
  /**
   * The provider keeps one callback URL per account (a bot's webhook, an instance's): registering one
   * takes the account's callbacks from whatever URL had them, another workspace's integration included.
   */
  oneCallbackPerAccount?: true;
  /**
   * The provider drops the account's callback URL before it judges a new one (Telegram's setWebhook): a
   * registration it refuses (`callback_refused`) leaves the account with none, and the integrations it
   * called no longer hear it either.
   */
  refusedRegistrationDropsCallback?: true;
  /** Verifies a callback as the provider's own and reads it; throws InboundRejected otherwise. */
  readInbound(config: C, request: InboundRequest): InboundBatch;
  /** Fetches a resource a verified notification named (`InboundBatch.toFetch`) and reads it. */
  resolveInbound?(config: C, notified: NotifiedResource, call: ProviderCall): Promise<InboundBatch>;
  /**
   * The account's callbacks the provider gave up delivering and keeps for the receiver to fetch (Mercado
   * Livre's missed_feeds), each read as `readInbound` reads a callback, under a key that names it for as
   * long as the provider keeps it: the connector polls them (missedCallbacksSweep) and takes each in once.
   * Page by page, so a poll cut short keeps the pages it read.
   */
  missedCallbacks?(config: C, call: ProviderCall): AsyncIterable<MissedCallback[]>;
  /**
   * The users' messages to the account since `since`, read from what the provider keeps, page by page:
   * for a provider that drops what it could not deliver once it stops calling (Meta, which posts nothing
   * it held back once it unsubscribed the app). The connector reads them when it registers again
   * (callbackSubscriptionSweep) and takes each in once.
   */
  messagesSince?(config: C, call: ProviderCall, since: Date): AsyncIterable<InboundBatch>;
  /**
   * Whether the provider still calls the integration's callbacks, for a provider that stops of its own
   * accord (Meta unsubscribes an app whose webhooks fail for an hour): the connector checks it now and
   * then (callbackSubscriptionSweep) and registers again (`registerInbound`) when it does not.
   */
  callbackSubscribed?(config: C, call: ProviderCall): Promise<boolean>;
  /** Template sends and the provider's template list, for channels that have templates. */
  templates?: TemplateCapability<C>;
  /** Answers the provider's subscription handshake (GET on the callback URL), when it has one. */
  answerHandshake?(config: C, query: Record<string, unknown>): string | undefined;
  /** What the provider requires of a callback URL, so a URL it would refuse is named before it does. */
  callbackUrlRules?: CallbackUrlRules;
  /**
   * Path segments the provider may append to the callback URL, each naming the event it posts there:
   * such a path is the same callback. Any other appended segment is no callback of ours.
   */
  callbackPathEvents?: readonly string[];
  /**
   * The largest callback body, in bytes once inflated, the provider may post (`defaultCallbackBodyBytes`
   * when unsaid). A body over it is refused with 413 on every redelivery, so it is lost: a provider that
   * documents a larger one says so here.
   */
  callbackBodyBytes?: number;
  /**
   * How the connector takes the provider's callbacks in. `inline` (when unsaid): recorded before the
   * answer, and one refused or left unanswered is the provider's to deliver again, as it documents.
   * `kept`: once verified and read, kept in the callback inbox and answered at once, then recorded by the
   * connector's workers (KeptCallbacks), for a provider that delivers each callback once (any answer but a
   * 2xx in time loses it) or wants an answer sooner than what a notification names can be fetched.
   */
  callbackIntake?: 'inline' | 'kept';
}

/** A callback the provider could not deliver, fetched from it: its key, and the batch read from it. */
export interface MissedCallback {
  key: string;
  batch: InboundBatch;
}

/** The largest callback body a provider that documents none may post: a mebibyte, a few hundred messages. */
export const defaultCallbackBodyBytes = 1024 * 1024;

/** The callback URL and topics someone must set in the provider's console, which has no API for it. */
export interface ManualRegistration {
  manual: { url: string; topics: string[] };
}

export interface CallbackUrlRules {
  httpsOnly: boolean;
  maxLength?: number;
  /** The only ports the provider calls. */
  ports?: readonly number[];
}

/**
 * One channel provider's wire format, on the config its channel's descriptor checks (the descriptor
 * also holds the account id). A channel whose descriptor has templates must implement them.
 */
export type ChannelAdapter<K extends IntegrationChannel> = ProviderOperations<ChannelConfig<K>> & {
  channel: K;
} & (K extends TemplateChannel ? { templates: TemplateCapability<ChannelConfig<K>> } : { templates?: never });

export interface ProviderTemplate {
  name: string;
  language: string;
  status: string;
  body: string;
  header_format: string | null;
  buttons: Array<Record<string, unknown>>;
}

/**
 * How many templates one integration's catalogue holds. Meta lists a WABA's in pages of at most 100 and
 * allows some thousands; a provider the tenant names may list any number, and each is a row written and,
 * at the next listing, deleted. A listing past it is refused whole, and the catalogue kept as it was.
 */
export const maxCatalogueTemplates = 10_000;

/**
 * How much text one catalogue keeps, counted in characters of its templates' fields as stored (buttons as
 * JSON): held in memory until the listing ends and written. Meta's own limits (a body
 * of 1,024 characters, ten buttons of short fields and one URL each) put a thousand templates at a few
 * megabytes; a provider the tenant names could otherwise fill every page with buttons of any shape, and
 * a hundred pages of a mebibyte each stay in the process at once.
 */
export const maxCatalogueChars = 16 * 2 ** 20;

/**
 * How deep and how many JSON values a template's buttons may hold. Meta's deepest button (an OTP one's
 * `supported_apps`, a list of objects) is four levels down and ten buttons hold some hundreds of values;
 * buttons past these are no provider's, and are kept as none (they are only shown, never sent).
 */
const templateButtonBounds = { depth: 6, values: 2_000 } as const;

/**
 * What a JSON value held in memory costs beyond its characters, counted in characters: `[]` is two
 * characters of JSON and some forty bytes of heap, so a catalogue counted by its JSON alone could hold
 * twenty times what its bound says.
 */
const charsPerValue = 16;

/**
 * The number of JSON values in a template's buttons, or undefined when they go deeper or hold more than
 * templateButtonBounds. Iterative, and checked before each level is walked: a listing may nest as deep
 * as the parser allows, and recursion (JSON.stringify's too) would overflow the stack on it.
 */
export function buttonValues(buttons: unknown): number | undefined {
  let count = 1;
  const pending: Array<{ value: unknown; depth: number }> = [{ value: buttons, depth: 0 }];
  for (let next = pending.pop(); next; next = pending.pop()) {
    if (next.value === null || typeof next.value !== 'object') continue;
    if (next.depth >= templateButtonBounds.depth) return undefined;
    const inner = Object.values(next.value);
    count += inner.length;
    if (count > templateButtonBounds.values) return undefined;
    for (const value of inner) pending.push({ value, depth: next.depth + 1 });
  }
  return count;
}

/** A template's share of maxCatalogueChars: its text, and its buttons by their JSON and their values. */
export function templateChars(t: ProviderTemplate): number {
  const fields = t.name.length + t.language.length + t.status.length + t.body.length;
  const buttons = JSON.stringify(t.buttons).length + charsPerValue * (buttonValues(t.buttons) ?? 0);
  return fields + (t.header_format?.length ?? 0) + buttons;
}

export interface TemplateCapability<C> {
  /** Every template, at most maxCatalogueTemplates and maxCatalogueChars (else an AppError saying so). */
  list(config: C, call: ProviderCall): Promise<ProviderTemplate[]>;
  send(
    config: C,
    message: { to: string; template: TemplateSend },
    call: ProviderCall,
  ): Promise<{ providerMessageId: string }>;
}

/**
 * Refusals the connector acts on, whatever the provider: credentials it no longer takes (the integration
 * is disconnected until someone fixes them), its rate limits (worth telling the caller to wait), a
 * callback URL it will not register (worth naming what the URL lacks), a recipient with no account on
 * the channel, and one whose account will not take the integration's messages (blocked it, was deleted,
 * never started a chat with it): for those two nothing was sent, and sending again is pointless until the
 * recipient acts, worth telling the caller so.
 */
export type ProviderRefusal =
  | 'credentials_rejected'
  | 'rate_limited'
  | 'callback_refused'
  | 'recipient_unknown'
  | 'recipient_unreachable';

/**
 * How much of a provider's own words an error keeps. A provider the tenant names may answer a megabyte
 * of them, and the message travels on: the error's detail in the bus reply, the failed message's
 * `error` in Postgres, the connector's and the gateway's log lines.
 */
export const providerErrorMaxChars = 1_000;

/** A provider's own words as an error of ours keeps them: bounded, storable. */
export const providerWords = (text: string): string => storableText(text, providerErrorMaxChars);

/** A provider answered with an error or could not be reached; the connector maps it to the API's 502. */
export class ProviderError extends Error {
  override name = 'ProviderError';
  readonly refusal: ProviderRefusal | undefined;
  /** Known to have ended before the message left (waiting for a token): nothing was sent, deadline or not. */
  readonly unsent: boolean;
  constructor(
    message: string,
    readonly status?: number,
    readonly providerCode?: number,
    options?: { cause?: unknown; refusal?: ProviderRefusal; unsent?: boolean },
  ) {
    super(providerWords(message), options);
    this.refusal = options?.refusal;
    this.unsent = options?.unsent ?? false;
  }
}
