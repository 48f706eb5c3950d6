import type { Response, Router } from 'express';
import type { ConversationWindows } from './conversation-windows.js';
import type { CredentialBook } from './credentials.js';
import type { FaultBook } from './faults.js';
import type { RedeliveryPolicy } from './redelivery.js';
import type { SentLog } from './sent-log.js';
import type { WebhookAnswer } from './webhook-transport.js';
import type { NumbersWithoutWhatsApp } from './without-whatsapp.js';

/** State every channel shares, so controls act on all channels alike. */
export interface SandboxStores {
  sent: SentLog;
  faults: FaultBook;
  credentials: CredentialBook;
  windows: ConversationWindows;
  withoutWhatsApp: NumbersWithoutWhatsApp;
  faultHoldMs: number;
  /**
   * Real providers call back only HTTPS URLs; a local stack whose connector serves plain HTTP has the
   * sandbox accept http callbacks too (`SANDBOX_HTTP_CALLBACKS=allow`).
   */
  allowHttpCallbacks: boolean;
}

export interface InboundMessage {
  account: string;
  /** Digits only. */
  from: string;
  name?: string;
  text: string;
  type: string;
  /** Only providers that sign their webhooks need it; the sandbox cannot know the app's secret otherwise. */
  appSecret?: string;
  /** Written in a group rather than to the account directly (providers that have groups). */
  groupId?: string;
  /** WhatsApp's LID addressing, where the provider names the chat by an opaque id (alt-a). */
  /**
   * `lid`: the contact named by its LID, its number beside it where the provider gives one; `lid-only`:
   * by its LID with no number at all (WhatsApp sent no sender_pn, so Baileys has no `remoteJidAlt`).
   */
  addressingMode?: 'pn' | 'lid' | 'lid-only';
  /** What the message is, on providers with several kinds (Mercado Livre: a question, or a post-sale message). */
  topic?: string;
  /** A username the user adopted, on providers that then hide the user's number (chat-official). */
  username?: string;
}

/** How an account stands with its provider: online, dropped (the session may come back), or logged out. */
export const ACCOUNT_STATES = ['connected', 'disconnected', 'logged_out'] as const;
export type AccountState = (typeof ACCOUNT_STATES)[number];

/** A callback URL as the provider keeps it: where it posts, with which headers, for which events. */
export interface WebhookRegistration {
  channel: string;
  account: string;
  url: string;
  headers: Record<string, string>;
  events: string[];
}

export const DELIVERY_STATUSES = ['sent', 'delivered', 'read', 'failed'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

export interface StatusUpdate {
  account: string;
  /** An id the emulated provider issued for one of its sends. */
  messageId: string;
  status: DeliveryStatus;
  /** The provider's error code for a `failed` status, where the provider has codes. */
  errorCode?: number;
  appSecret?: string;
}

/** Body is the exact serialized text, because some providers sign those bytes. */
export interface WebhookDelivery {
  url: string;
  headers: Record<string, string>;
  /** As sent: the JSON text, or its bytes compressed as the provider compresses them. */
  body: string | Uint8Array;
  /**
   * The provider's delivery queue, where it has them: while one delivery of the queue is being delivered
   * again, its later ones wait (Telegram's webhook queues, one per chat).
   */
  queue?: string;
}

export interface InboundDelivery extends WebhookDelivery {
  /** The provider's id of the inbound message, so a test can find it again on the connector side. */
  providerMessageId: string;
}

export interface ChannelEmulator {
  /** Also the mount path: the emulated API answers under `/<channel>`. */
  readonly channel: string;
  /**
   * The emulated provider API. It parses its own request bodies, so that a malformed one is refused in
   * the provider's own error shape.
   */
  readonly router: Router;
  /** Extra `/_sandbox` routes only this channel understands (e.g. registering Cloud API templates). */
  readonly controlRouter?: Router;
  /** Undefined when the provider would have nowhere to deliver this message for the account. */
  inboundDelivery(message: InboundMessage): InboundDelivery | undefined;
  /**
   * Absent when the provider reports no delivery statuses by webhook. Undefined when it would have nowhere
   * to deliver the update for the account.
   */
  statusDelivery?(update: StatusUpdate): WebhookDelivery | undefined;
  /** Puts the account in a connection state, with the provider's behaviour in it. Absent: not modelled. */
  setAccountState?(account: string, state: AccountState): void;
  /** The callback URLs registered with the provider, the account's only when one is given. */
  webhooks?(account?: string): WebhookRegistration[];
  /**
   * The provider's answer to a call over its rate limit, as it signals it (status, body, any retry hint).
   * Absent when the provider documents none; the `rate_limit` fault is then refused for the channel.
   */
  rateLimited?(res: Response): void;
  /**
   * True when the channel's sends emulate the `lost_answer` fault (the message taken and sent, the answer
   * held); the fault is refused for the others.
   */
  losesAnswers?: boolean;
  /**
   * How the provider delivers a webhook the receiver did not take again, of its own accord. Absent: the
   * sandbox does not (yet) emulate its redelivery, and only the controls' `repeat` delivers again.
   */
  redelivery?: RedeliveryPolicy;
  /**
   * A delivery the provider gave up on (`redelivery`), the last made as sent and every answer, for
   * providers that keep those for the receiver to fetch (Mercado Livre's missed_feeds).
   */
  undelivered?(account: string, last: WebhookDelivery, answers: readonly (WebhookAnswer | undefined)[]): void;
  /** Forgets the channel's own state (webhook registrations and the like). */
  reset(): void;
  /** Settles once nothing the channel posts of its own accord (e.g. a late failure status) is under way. */
  idle?(): Promise<void>;
}

/** `fetchImpl` is how a channel reaches out on its own, e.g. for a webhook verification handshake. */
export type ChannelFactory = (stores: SandboxStores, fetchImpl: typeof fetch) => ChannelEmulator;
