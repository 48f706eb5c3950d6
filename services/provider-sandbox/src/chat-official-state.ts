import { randomBytes } from 'node:crypto';
import type { TemplateRegistry } from './chat-official-templates.js';

export const CHAT_OFFICIAL = 'chat-official';

/** Where Meta posts an account's notifications once the handshake passed. */
export interface CallbackOverride {
  url: string;
  verifyToken: string;
}

/** What a status update needs to know about a send the sandbox answered. */
export interface IssuedMessage {
  account: string;
  to: string;
}

/** The Cloud API emulation's own memory; `reset` empties all of it. */
export interface ChatOfficialState {
  templates: TemplateRegistry;
  /** By phone number id. */
  overrides: Map<string, CallbackOverride>;
  /** By wamid. */
  issued: Map<string, IssuedMessage>;
}

/** Real wamids are base64 of an opaque binary id; only the prefix and uniqueness matter to a client. */
export function newWamid(): string {
  return `wamid.${randomBytes(24).toString('base64url')}`;
}
