import { sameSecret } from '@inbox/service-kit';
import { z } from 'zod';
import { messageContent } from './alt-a-content.js';
import {
  type ChannelAdapter,
  type InboundBatch,
  InboundRejected,
  ProviderError,
  type StatusUpdate,
} from './channel-adapter.js';
import { callProvider, headerValue, joinUrl, type ProviderAnswer, retryAfterNote } from './http.js';

// Facts about Evolution API v2 below are from its source (github.com/EvolutionAPI/evolution-api, 2.3.x):
// src/api/integrations/event/webhook/webhook.{controller,schema}.ts, src/api/services/channel.service.ts
// (sendDataWebhook), src/api/integrations/channel/whatsapp/whatsapp.baileys.service.ts (messages.upsert,
// messages.update, prepareMessage, sendMessageWithTyping), src/utils/renderStatus.ts, src/main.ts.

/**
 * The header Evolution is told to send on every callback (`webhook.headers`, which its webhook
 * controller puts on each POST). Its body's `apikey` is null unless the operator sets
 * AUTHENTICATION_EXPOSE_IN_FETCH_INSTANCES=true, so it proves nothing; the header holds the
 * integration's own callback secret instead.
 */
export const ALT_A_CALLBACK_HEADER = 'x-inbox-callback-secret';

/** New messages, and the acks of ours (SERVER_ACK, DELIVERY_ACK, READ, PLAYED). */
const EVENTS = ['MESSAGES_UPSERT', 'MESSAGES_UPDATE'];

const empty = (): InboundBatch => ({ messages: [], statuses: [] });

const SendTextAnswer = z.object({ key: z.object({ id: z.string().min(1) }) });

/** Every callback: `{ event, instance, data, destination, date_time, sender, server_url, apikey }`. */
const Callback = z.object({ event: z.string(), instance: z.string().optional(), data: z.unknown() });

/** `prepareMessage`'s output: the Baileys key as it came (Baileys 7 adds the `*Alt` jids and `addressingMode`). */
const Upsert = z.object({
  key: z.object({
    remoteJid: z.string(),
    fromMe: z.boolean(),
    id: z.string().min(1),
    remoteJidAlt: z.string().nullish(),
    // Baileys 6's `sender_pn` (Evolution 2.2 and 2.3.0), the number of a chat named by its LID.
    senderPn: z.string().nullish(),
  }),
  // `message.pushName || null` when the sender has no profile name.
  pushName: z.string().nullish(),
  message: z.record(z.string(), z.unknown()).nullish(),
  messageTimestamp: z.union([z.number(), z.string()]).nullish(),
});

const Update = z.object({ keyId: z.string().min(1), fromMe: z.boolean(), status: z.string() });

/** renderStatus.ts: 0 ERROR, 1 PENDING, 2 SERVER_ACK, 3 DELIVERY_ACK, 4 READ, 5 PLAYED; DELETED too. */
const ackStatuses: Record<string, StatusUpdate['status']> = {
  SERVER_ACK: 'sent',
  DELIVERY_ACK: 'delivered',
  READ: 'read',
  PLAYED: 'read',
  ERROR: 'failed',
};

const PHONE_JID = /^(\d+)(?::\d+)?@s\.whatsapp\.net$/;
const LID_JID = /^(\d{6,20})(?::\d+)?@lid$/;

/**
 * The number of a one-to-one chat. With LID addressing (`addressingMode: "lid"`) `remoteJid` is the
 * `…@lid` id and the number is in `remoteJidAlt`, as Evolution's own Chatwoot integration reads it (2.3.6);
 * 2.3.7 writes the number over the LID before it posts, so both name it, and 2.4.0's release candidates
 * swap the two: whichever names a number is the number. On Evolution 2.2 to 2.3.0, whose Baileys had no
 * `*Alt` jids, it is in `senderPn`, where that version's Chatwoot integration read it
 * (chatwoot.service.ts at 2.3.0: `isLid ? body.key.senderPn : body.key.remoteJid`). A LID chat with
 * neither names no number.
 */
function customerNumber(key: z.infer<typeof Upsert>['key']): string | undefined {
  for (const jid of [key.remoteJid, key.remoteJidAlt, key.senderPn]) {
    const digits = jid ? PHONE_JID.exec(jid)?.[1] : undefined;
    if (digits) return digits;
  }
  return undefined;
}

function sentAt(timestamp: number | string | null | undefined): Date {
  const seconds = Number(timestamp);
  return timestamp !== null && timestamp !== undefined && Number.isFinite(seconds) && seconds > 0
    ? new Date(seconds * 1000)
    : new Date();
}

/**
 * Evolution's errors are `{ status, error, response: { message } }`, the message a string or a list
 * (strings, or `{ jid, exists: false, number }` for a number that is not on WhatsApp).
 */
function messageParts(body: unknown): unknown[] {
  const message = (body as { response?: { message?: unknown } } | null)?.response?.message;
  return Array.isArray(message) ? message : message === undefined ? [] : [message];
}

/** sendMessageWithTyping's refusal after WhatsApp's check: its OnWhatsAppDto, `exists: false`. */
const notOnWhatsApp = (part: unknown): part is { jid?: unknown; number?: unknown } =>
  typeof part === 'object' && part !== null && (part as { exists?: unknown }).exists === false;

function reasonOf(body: unknown): string {
  return messageParts(body)
    .map((part) => {
      if (typeof part === 'string') return part;
      if (notOnWhatsApp(part)) return `${String(part.number ?? part.jid)} is not on WhatsApp`;
      return JSON.stringify(part);
    })
    .join('; ');
}

/**
 * A refused call in words. A closed WhatsApp connection (disconnected or logged out) answers
 * `500 "Connection Closed"` when the number is checked first, `400 ["Error: Connection Closed"]` when
 * the send itself fails; WhatsApp's own rate limit comes as `400 ["Error: rate-overlimit"]`, with no
 * retry hint.
 *
 * Refused credentials, which disconnect an integration at a send and are the caller's 400 at its
 * creation, are only what Evolution itself says: its instanceExistsGuard's `404 ["The "…" instance does
 * not exist"]` (a failing lookup there is a 500), in its own JSON; a proxy's plain `404 page not found`
 * while Evolution restarts is not. A 401 is refused credentials only when registering: Evolution's
 * authGuard also answers 401 when its own database lookup of the key fails, which a send must not
 * take for a wrong key.
 */
function failure(what: string, answer: ProviderAnswer, stage: 'register' | 'send'): ProviderError {
  const reason = reasonOf(answer.body);
  const said = reason ? `: ${reason}` : '';
  const noInstance = answer.status === 404 && /instance does not exist/i.test(reason);
  const text = /Connection Closed/i.test(reason)
    ? `alt-a instance is not connected to WhatsApp (${what} answered ${answer.status}${said})`
    : /rate-overlimit/i.test(reason)
      ? `alt-a: WhatsApp is rate limiting the instance, try again later (${what} answered ${answer.status}${said})`
      : noInstance
        ? `alt-a instance does not exist (${what} answered 404${said})`
        : answer.status === 401
          ? `alt-a refused the api_key (${what} answered 401)`
          : `alt-a answered ${answer.status} to ${what}${said}${retryAfterNote(answer)}`;
  const refused = noInstance || (answer.status === 401 && stage === 'register');
  const unknownRecipient = answer.status === 400 && messageParts(answer.body).some(notOnWhatsApp);
  return new ProviderError(
    text,
    answer.status,
    undefined,
    refused ? { refusal: 'credentials_rejected' } : unknownRecipient ? { refusal: 'recipient_unknown' } : {},
  );
}

/** alt-a speaks the Evolution API v2: an instance per number, an `apikey` on every call. */
export const altAAdapter: ChannelAdapter<'alt-a'> = {
  channel: 'alt-a',

  async sendText(config, message, call) {
    const answer = await callProvider(
      call,
      'alt-a',
      joinUrl(config.base_url, `message/sendText/${encodeURIComponent(config.instance)}`),
      {
        method: 'POST',
        headers: { apikey: config.api_key },
        body: { number: message.to, text: message.text },
      },
    );
    if (!answer.ok) throw failure('sendText', answer, 'send');
    const parsed = SendTextAnswer.safeParse(answer.body);
    if (!parsed.success) throw new ProviderError('alt-a answered without a message id', answer.status);
    return { providerMessageId: parsed.data.key.id };
  },

  // v2's field names (webhook.schema.ts): `byEvents` and `base64`; v1's `webhookByEvents` are ignored.
  async registerInbound(config, callbackUrl, call) {
    if (!config.callback_secret) throw new Error('alt-a integration has no callback secret');
    const answer = await callProvider(
      call,
      'alt-a',
      joinUrl(config.base_url, `webhook/set/${encodeURIComponent(config.instance)}`),
      {
        method: 'POST',
        headers: { apikey: config.api_key },
        body: {
          webhook: {
            enabled: true,
            url: callbackUrl,
            headers: { [ALT_A_CALLBACK_HEADER]: config.callback_secret },
            byEvents: false,
            base64: false,
            events: EVENTS,
          },
        },
      },
    );
    if (!answer.ok) throw failure('webhook/set', answer, 'register');
  },

  // An instance has one webhook: webhook/set upserts its row by instanceId (webhook.controller.ts).
  oneCallbackPerAccount: true,

  // With `byEvents` on, which an operator may turn on in Evolution's manager after we registered without
  // it, Evolution posts each event to the URL with its name appended, kebab-cased
  // (webhook.controller.ts: `${instance?.url}/${transformedWe}`), and gives up at once on a 404.
  callbackPathEvents: EVENTS.map((event) => event.replace(/_/g, '-').toLowerCase()),

  readInbound(config, request) {
    const secret = headerValue(request.headers, ALT_A_CALLBACK_HEADER);
    if (!config.callback_secret || !sameSecret(secret, config.callback_secret)) {
      throw new InboundRejected('alt-a callback secret header missing or wrong');
    }
    const parsed = Callback.safeParse(JSON.parse(request.rawBody.toString('utf8')));
    if (!parsed.success) return empty();
    const { event, instance, data } = parsed.data;
    if (instance !== undefined && instance !== config.instance) {
      throw new InboundRejected('alt-a callback names another instance');
    }
    if (event === 'messages.upsert') return readUpsert(data);
    if (event === 'messages.update') return readUpdate(data);
    return empty();
  },
};

/**
 * Groups (`@g.us`, the sender in `key.participant`), status and broadcast lists (`@broadcast`) and
 * channels (`@newsletter`) are not a customer's conversation, nor is our own message (`fromMe`).
 */
function readUpsert(data: unknown): InboundBatch {
  const upsert = Upsert.safeParse(data);
  if (!upsert.success || upsert.data.key.fromMe) return empty();
  const { key, pushName, message, messageTimestamp } = upsert.data;
  if (/@(g\.us|broadcast|newsletter)$/.test(key.remoteJid)) return empty();
  const number = customerNumber(key);
  // WhatsApp may name a contact by its LID with no number at all (no sender_pn): such a contact is keyed
  // by the LID, as Z-API's are, and sent to there (Evolution's createJid keeps a `…@lid` jid). Beside a
  // number, the LID is noted on its contact, which a later message naming the LID alone then reaches.
  const lid = [key.remoteJid, key.remoteJidAlt]
    .map((jid) => (jid ? LID_JID.exec(jid)?.[1] : undefined))
    .find(Boolean);
  const from = number ?? (lid ? `${lid}@lid` : undefined);
  if (!from) {
    const reason = 'alt-a chat names neither a phone number nor a LID';
    return { ...empty(), unreadable: [{ providerMessageId: key.id, reason }] };
  }
  const said = messageContent(message);
  if (!said) return empty();
  return {
    messages: [
      {
        providerMessageId: key.id,
        from,
        ...(number ? (lid ? { userId: `${lid}@lid` } : {}) : { keyedBy: 'user_id' as const }),
        name: pushName?.trim() || null,
        ...said,
        sentAt: sentAt(messageTimestamp),
      },
    ],
    statuses: [],
  };
}

// Acks of the contact's own messages (our reading them) are not statuses of ours.
function readUpdate(data: unknown): InboundBatch {
  const update = Update.safeParse(data);
  const status = update.success && update.data.fromMe ? ackStatuses[update.data.status] : undefined;
  if (!update.success || !status) return empty();
  return {
    messages: [],
    statuses: [
      {
        providerMessageId: update.data.keyId,
        status,
        error: status === 'failed' ? 'WhatsApp reported the message as ERROR' : null,
      },
    ],
  };
}
