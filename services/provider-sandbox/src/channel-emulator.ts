import type { Router } from 'express';
import type { ConversationWindows } from './conversation-windows.js';
import type { CredentialBook } from './credentials.js';
import type { FaultBook } from './faults.js';
import type { SentLog } from './sent-log.js';

/** State every channel shares, so controls act on all channels alike. */
export interface SandboxStores {
  sent: SentLog;
  faults: FaultBook;
  credentials: CredentialBook;
  windows: ConversationWindows;
  faultHoldMs: number;
}

export interface InboundMessage {
  account: string;
  /** Digits only. */
  from: string;
  name?: string;
  text: string;
  type: string;
}

/** Body is the exact serialized text, because some providers sign those bytes. */
export interface WebhookDelivery {
  url: string;
  headers: Record<string, string>;
  body: string;
}

export interface ChannelEmulator {
  /** Also the mount path: the emulated API answers under `/<channel>`. */
  readonly channel: string;
  readonly router: Router;
  /** Undefined when the provider would have nowhere to deliver this message for the account. */
  inboundDelivery(message: InboundMessage): WebhookDelivery | undefined;
  /** Forgets the channel's own state (webhook registrations and the like). */
  reset(): void;
}

export type ChannelFactory = (stores: SandboxStores) => ChannelEmulator;
