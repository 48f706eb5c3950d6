import { randomBytes } from 'node:crypto';
import type { WebhookDelivery } from './channel-emulator.js';
import type { BusinessScopedIds } from './chat-official-inbound.js';
import type { TemplateRegistry } from './chat-official-templates.js';
import type { ThrottleCode, TokenEnding } from './graph-error.js';
import type { IssuedMessages } from './issued-messages.js';

export const CHAT_OFFICIAL = 'chat-official';

/** Where Meta posts notifications once the handshake passed. */
export interface CallbackOverride {
  url: string;
  verifyToken: string;
}

/** The app's subscription to a WhatsApp Business Account, with the WABA's own callback override if set. */
export interface WabaSubscription {
  override?: CallbackOverride;
}

/** What a status update needs to know about a send the sandbox answered. */
export interface IssuedMessage {
  account: string;
  to: string;
  /** The sender's `biz_opaque_callback_data`, which Meta echoes in the message's statuses. */
  callbackData?: string;
  /** The BSUID it was sent to (`recipient`), which its statuses name instead of a number. */
  userId?: string;
}

/** Throttling errors a phone number's next sends answer (to one recipient, or to any when `to` is absent). */
export interface Throttle {
  code: ThrottleCode;
  to?: string;
  remaining: number;
}

/** The Cloud API emulation's own memory; `reset` empties all of it. */
export interface ChatOfficialState {
  /** Templates, and which WABA each phone number belongs to. */
  templates: TemplateRegistry;
  /** By WABA id: the app is subscribed to its webhooks. */
  subscriptions: Map<string, WabaSubscription>;
  /** By phone number id. */
  overrides: Map<string, CallbackOverride>;
  /** By wamid. */
  issued: IssuedMessages<IssuedMessage>;
  /**
   * By phone number id: the secret of the app behind it, as a control last gave it. Meta knows it; the
   * sandbox is told, and cannot sign a notification of its own accord until it is.
   */
  appSecrets: Map<string, string>;
  /**
   * Phone number ids whose app secret a control declared as the app's (`/chat-official/app-secret`), against
   * which calls' `appsecret_proof` is checked. Not the first secret an inbound control signs with, which may
   * be a test's forgery.
   */
  declaredAppSecrets: Set<string>;
  /** Phone number ids whose app has "Require App Secret" on: a call without `appsecret_proof` is refused. */
  proofRequired: Set<string>;
  /** By token: tokens that stopped working, and when. */
  endedTokens: Map<string, { ending: TokenEnding; at: Date }>;
  /** By phone number id. */
  throttles: Map<string, Throttle[]>;
  /** By phone number id: the last notification posted, byte for byte, for a redelivery. */
  lastNotification: Map<string, WebhookDelivery>;
  /** The BSUIDs given to users, by business (WABA). */
  userIds: BusinessScopedIds;
}

/** Real wamids are base64 of an opaque binary id; only the prefix and uniqueness matter to a client. */
export function newWamid(): string {
  return `wamid.${randomBytes(24).toString('base64url')}`;
}
