import type { IntegrationChannel } from '@inbox/contracts';
import type { OutboundGuard } from '@inbox/outbound-http';
import type { Logger } from '@inbox/service-kit';
import type { z } from 'zod';

export interface OutboundText {
  /** Recipient in E.164 without the `+`, as providers take it. */
  to: string;
  text: string;
}

/** What a provider's callback carried, once verified: new messages and status changes. */
export interface InboundBatch {
  messages: InboundMessage[];
  statuses: StatusUpdate[];
}

export interface InboundMessage {
  providerMessageId: string;
  /** Sender's number, digits only. */
  from: string;
  name: string | null;
  text: string;
  type: 'text' | 'image' | 'audio' | 'video' | 'document' | 'location' | 'others';
  sentAt: Date;
}

export interface StatusUpdate {
  providerMessageId: string;
  status: 'sent' | 'delivered' | 'read' | 'failed';
  error: string | null;
}

export interface InboundRequest {
  headers: Record<string, string | string[] | undefined>;
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
}

/** One channel provider's wire format, behind the operations the connector needs. */
export interface ChannelAdapter<C extends Record<string, string> = Record<string, string>> {
  channel: IntegrationChannel;
  /** The credentials and `base_url` the provider needs; validated when an integration is created. */
  config: z.ZodType<C>;
  /** The provider-side account id that inbound messages carry. */
  accountId(config: C): string;
  sendText(config: C, message: OutboundText, call: ProviderCall): Promise<{ providerMessageId: string }>;
  /** Tells the provider where to deliver inbound messages for this account. */
  registerInbound(config: C, callbackUrl: string, call: ProviderCall): Promise<void>;
  /** Verifies a callback as the provider's own and reads it; throws InboundRejected otherwise. */
  readInbound(config: C, request: InboundRequest): InboundBatch;
  /** Template sends and the provider's template list, for channels that have templates. */
  templates?: TemplateCapability<C>;
  /** Answers the provider's subscription handshake (GET on the callback URL), when it has one. */
  answerHandshake?(config: C, query: Record<string, unknown>): string | undefined;
}

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
    message: { to: string; template: import('@inbox/contracts').TemplateSend },
    call: ProviderCall,
  ): Promise<{ providerMessageId: string }>;
}

/** A provider answered with an error or could not be reached; the connector maps it to the API's 502. */
export class ProviderError extends Error {
  override name = 'ProviderError';
  constructor(
    message: string,
    readonly status?: number,
    readonly providerCode?: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
