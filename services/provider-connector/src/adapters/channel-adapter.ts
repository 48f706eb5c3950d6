import type { ChannelConfig, IntegrationChannel, TemplateChannel, TemplateSend } from '@inbox/contracts';
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
  /** A contact's message that cannot be taken in (e.g. no number to key its contact by), and why. */
  unreadable?: Array<{ providerMessageId: string; reason: string }>;
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
  name: string | null;
  text: string;
  type: 'text' | 'image' | 'audio' | 'video' | 'document' | 'location' | 'others';
  sentAt: Date;
}

export interface StatusUpdate {
  providerMessageId: string;
  status: 'sent' | 'delivered' | 'read' | 'failed';
  error: string | null;
  /** The provider's error code of a failure, where it has codes. */
  errorCode?: number | null;
  /** When the provider says the status changed. */
  at?: Date;
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
  /** The operation's deadline. */
  signal: AbortSignal;
  logger: Logger;
  /** Where a channel without a third party (live chat) hands an operator's message to its visitor. */
  visitors?: VisitorDelivery;
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
  /** Tells the provider where to deliver inbound messages for this account. */
  registerInbound(config: C, callbackUrl: string, call: ProviderCall): Promise<void>;
  /** Verifies a callback as the provider's own and reads it; throws InboundRejected otherwise. */
  readInbound(config: C, request: InboundRequest): InboundBatch;
  /** Template sends and the provider's template list, for channels that have templates. */
  templates?: TemplateCapability<C>;
  /** Answers the provider's subscription handshake (GET on the callback URL), when it has one. */
  answerHandshake?(config: C, query: Record<string, unknown>): string | undefined;
  /** What the provider requires of a callback URL, so a URL it would refuse is named before it does. */
  callbackUrlRules?: CallbackUrlRules;
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

export interface TemplateCapability<C> {
  list(config: C, call: ProviderCall): Promise<ProviderTemplate[]>;
  send(
    config: C,
    message: { to: string; template: TemplateSend },
    call: ProviderCall,
  ): Promise<{ providerMessageId: string }>;
}

/**
 * Refusals the connector acts on, whatever the provider: credentials it no longer takes (the integration
 * is disconnected until someone fixes them), its rate limits (worth telling the caller to wait), and a
 * callback URL it will not register (worth naming what the URL lacks).
 */
export type ProviderRefusal = 'credentials_rejected' | 'rate_limited' | 'callback_refused';

/** A provider answered with an error or could not be reached; the connector maps it to the API's 502. */
export class ProviderError extends Error {
  override name = 'ProviderError';
  readonly refusal: ProviderRefusal | undefined;
  constructor(
    message: string,
    readonly status?: number,
    readonly providerCode?: number,
    options?: { cause?: unknown; refusal?: ProviderRefusal },
  ) {
    super(message, options);
    this.refusal = options?.refusal;
  }
}
