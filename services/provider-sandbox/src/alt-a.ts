import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import { sameSecret } from '@inbox/service-kit';
import { type NextFunction, type Request, type Response, Router } from 'express';
import { z } from 'zod';
import {
  badRequest,
  checkSendText,
  checkSetWebhook,
  EVOLUTION_EVENTS,
  evolutionError,
  notOnWhatsApp,
  unauthorized,
} from './alt-a-validation.js';
import { baileysKinds, baileysMessage } from './baileys-messages.js';
import type {
  AccountState,
  ChannelEmulator,
  InboundDelivery,
  InboundMessage,
  SandboxStores,
  StatusUpdate,
  WebhookDelivery,
  WebhookRegistration,
} from './channel-emulator.js';
import { ControlError } from './control-error.js';
import { answerFault } from './faults.js';
import { IssuedMessages } from './issued-messages.js';
import { jsonBody } from './json-body.js';
import { parseControl } from './parse-control.js';
import { evolutionLocalIsoTime, randomDigits, unixSeconds, upperHexId } from './provider-ids.js';
import type { RedeliveryPolicy } from './redelivery.js';
import { whatsappNumber } from './whatsapp-number.js';

// Emulates Evolution API v2, the provider behind the `alt-a` channel, from its source
// (github.com/EvolutionAPI/evolution-api 2.3.x): guards/auth.guard.ts, main.ts (error shape),
// integrations/event/webhook/webhook.{controller,schema,router}.ts, services/channel.service.ts
// (sendDataWebhook), integrations/channel/whatsapp/whatsapp.baileys.service.ts (textMessage,
// sendMessageWithTyping, whatsappNumber, messages.upsert, messages.update, prepareMessage),
// utils/renderStatus.ts, utils/createJid.ts, env.config.ts and .env.example (defaults).
const CHANNEL = 'alt-a';

/**
 * Evolution's webhook retries at their defaults (webhook.controller.ts, `retryWebhookRequest`: WEBHOOK.RETRY
 * unset): 10 deliveries in all, waiting 5 s after the first failure and doubling up to 300 s, each wait
 * ±20 % but never under 5 s; a 400, 401, 403, 404 or 422 is final, and any other answer, a timeout or no
 * connection is tried again.
 */
export const evolutionRedelivery: RedeliveryPolicy = {
  nextWaitMs({ failures, answer }) {
    if (failures >= 10 || (answer && [400, 401, 403, 404, 422].includes(answer.status))) return undefined;
    const doubled = Math.min(5_000 * 2 ** (failures - 1), 300_000);
    return Math.max(5_000, doubled + doubled * 0.2 * (Math.random() * 2 - 1));
  },
};

const instanceBody = z.object({
  instance: z.string({ error: 'instance must be a string' }).min(1, 'instance must not be empty'),
  token: z.string({ error: 'token must be a string' }).min(1, 'token must not be empty'),
});

const noInstance = (name: string) =>
  `${CHANNEL} has no instance "${name}": create it with POST /_sandbox/alt-a/instances, as an operator does in Evolution's manager`;

/** The server's own address in every callback (`server_url`, SERVER_URL in .env.example). */
const SERVER_URL = 'http://localhost:8080';

/** The Webhook row Evolution keeps per instance (prisma schema), answered by `webhook/set`. */
interface Webhook {
  id: string;
  url: string;
  headers: Record<string, string>;
  enabled: boolean;
  events: string[];
  webhookByEvents: boolean;
  webhookBase64: boolean;
  createdAt: string;
  updatedAt: string;
  instanceId: string;
}

interface Instance {
  /** Evolution's own id of the instance (a UUID), not its name. */
  id: string;
  /** The instance's own API key (`hash` when it was created), which its calls may present as `apikey`. */
  token: string;
  /** The connected number (`sender`). */
  wuid: string;
  state: AccountState;
  webhook?: Webhook;
  /** Numbers already checked on WhatsApp (its onWhatsapp cache): a send to them fails differently. */
  known: Set<string>;
}

/** renderStatus.ts, for the statuses the controls can report. */
const ACKS = { sent: 'SERVER_ACK', delivered: 'DELIVERY_ACK', read: 'READ', failed: 'ERROR' } as const;

/**
 * The server's global API key (AUTHENTICATION_API_KEY), which Evolution's authGuard takes for every
 * instance as it takes the instance's own token (src/api/guards/auth.guard.ts): the value the official
 * image's .env.example ships, as a server whose operator never changed it runs.
 */
export const EVOLUTION_GLOBAL_API_KEY = '429683C4C977415CAAFCCE10F7D57E11';

export function createAltA(stores: SandboxStores): ChannelEmulator {
  const instances = new Map<string, Instance>();
  const issued = new IssuedMessages<{ account: string; to: string }>(stores.sent.limit);
  /** WhatsApp's LID of each contact, stable per instance. */
  const lids = new Map<string, string>();
  const router = Router();
  router.use(jsonBody);

  /** An instance a control names: one the operator created, else the control is a test's mistake. */
  const instance = (name: string): Instance => {
    const found = instances.get(name);
    if (!found) throw new ControlError(404, noInstance(name));
    return found;
  };
  const lidOf = (account: string, number: string): string => {
    const key = `${account}:${number}`;
    if (!lids.has(key)) lids.set(key, randomDigits(14));
    return lids.get(key)!;
  };

  // index.router.ts's guards, in their order: the instance must exist (instanceExistsGuard), whatever the
  // apikey, then the apikey must be the server's global key or the instance's token (authGuard), both
  // before the body is looked at.
  function requireApiKey(req: Request<{ instance: string }>, res: Response, next: NextFunction): void {
    const found = instances.get(req.params.instance);
    if (!found) {
      res.status(404).json(evolutionError(404, [`The "${req.params.instance}" instance does not exist`]));
      return;
    }
    const key = req.get('apikey');
    if (!sameSecret(key, found.token) && !sameSecret(key, EVOLUTION_GLOBAL_API_KEY)) {
      res.status(401).json(unauthorized());
      return;
    }
    next();
  }

  /** WhatsApp's own limit, as Baileys raises it inside sendMessageWithTyping: no retry hint at all. */
  function rateLimited(res: Response): void {
    res.status(400).json(badRequest(['Error: rate-overlimit']));
  }

  router.post('/message/sendText/:instance', requireApiKey, (req: Request<{ instance: string }>, res) => {
    const account = req.params.instance;
    const fault = stores.faults.find(CHANNEL, account);
    if (fault) {
      answerFault(fault, res, faultBody, stores.faultHoldMs, rateLimited);
      return;
    }
    const checked = checkSendText(req.body);
    if (!checked.ok) {
      res.status(400).json(badRequest(checked.problems));
      return;
    }
    const { number, digits, text } = checked;
    const current = instance(account);
    if (digits === '') {
      res.status(400).json(notOnWhatsApp(number, digits));
      return;
    }
    if (current.state !== 'connected') {
      // A number not yet in the onWhatsapp cache is checked over the closed socket, outside the send's
      // try: the error escapes to main.ts's handler as a 500 with the bare message. A known number gets
      // as far as the send, whose catch answers 400 with the error's string.
      if (current.known.has(digits)) res.status(400).json(badRequest(['Error: Connection Closed']));
      else res.status(500).json(evolutionError(500, 'Connection Closed'));
      return;
    }
    // Checked with WhatsApp before the send; only a number found is kept in the onWhatsapp cache.
    if (stores.withoutWhatsApp.has(digits)) {
      res.status(400).json(notOnWhatsApp(number, digits));
      return;
    }
    current.known.add(digits);
    // A LID jid is sent to as it is (createJid keeps it, and onWhatsapp takes any LID as valid).
    const lidJid = /^\d+(?::\d+)?@lid$/.test(number) ? number.replace(/:\d+/, '') : undefined;
    const to = lidJid ?? digits;
    const now = new Date();
    const id = sentMessageId();
    issued.set(id, { account, to });
    stores.sent.record({
      channel: CHANNEL,
      account,
      to,
      method: req.method,
      path: `${req.baseUrl}${req.path}`,
      body: req.body,
      provider_message_id: id,
      received_at: now.toISOString(),
    });
    // prepareMessage of what Baileys sent: no pushName of ours, so "Você"; Baileys' ids from this
    // library start 3EB0 and read as the "web" device.
    res.status(201).json({
      key: { remoteJid: lidJid ?? `${whatsappNumber(digits)}@s.whatsapp.net`, fromMe: true, id },
      pushName: 'Você',
      status: 'PENDING',
      message: { conversation: text },
      messageType: 'conversation',
      messageTimestamp: unixSeconds(now),
      instanceId: current.id,
      source: 'web',
    });
  });

  // instance.controller.ts deleteInstance: every later call naming it is the guard's 404.
  router.delete('/instance/delete/:instance', requireApiKey, (req: Request<{ instance: string }>, res) => {
    instances.delete(req.params.instance);
    res.json({ status: 'SUCCESS', error: false, response: { message: 'Instance deleted' } });
  });

  router.post('/webhook/set/:instance', requireApiKey, (req: Request<{ instance: string }>, res) => {
    const checked = checkSetWebhook(req.body);
    if (!checked.ok) {
      res.status(400).json(badRequest(checked.problems));
      return;
    }
    const { enabled, url, headers, byEvents, base64, events } = checked.webhook;
    const current = instance(req.params.instance);
    const now = new Date().toISOString();
    // webhook.controller.ts `set`: disabled keeps no events; enabled with none listed takes them all.
    current.webhook = {
      id: current.webhook?.id ?? cuid(),
      url,
      headers,
      enabled,
      events: !enabled ? [] : events.length === 0 ? [...EVOLUTION_EVENTS] : events,
      webhookByEvents: byEvents,
      webhookBase64: base64,
      createdAt: current.webhook?.createdAt ?? now,
      updatedAt: now,
      instanceId: current.id,
    };
    res.status(201).json(current.webhook);
  });

  /**
   * Where Evolution would post an event of the account, or undefined when it would post it nowhere
   * (no webhook, disabled, or a URL its emit refuses). A webhook that lacks the event is a test's
   * mistake worth saying.
   */
  function target(account: string, event: string): { current: Instance; webhook: Webhook } | undefined {
    const current = instance(account);
    const webhook = current.webhook;
    if (!webhook?.enabled || !/^(https?:\/\/)/.test(webhook.url)) return undefined;
    if (current.state !== 'connected') {
      throw new ControlError(
        409,
        `${CHANNEL} account ${account} is ${current.state}: WhatsApp tells it nothing`,
      );
    }
    if (!webhook.events.includes(event)) {
      throw new ControlError(409, `${CHANNEL} account ${account} webhook is not subscribed to ${event}`);
    }
    return { current, webhook };
  }

  /**
   * One `sendDataWebhook` POST: the configured headers on axios's own, `apikey` null (the default,
   * AUTHENTICATION_EXPOSE_IN_FETCH_INSTANCES unset), and with `byEvents` the kebab-cased event appended
   * to the URL exactly as the controller does (`${url}/${event}`, a trailing slash kept).
   */
  function callback(
    account: string,
    found: { current: Instance; webhook: Webhook },
    event: string,
    data: unknown,
  ) {
    const { current, webhook } = found;
    const kebab = event.replace(/\./g, '-');
    const url = webhook.webhookByEvents ? `${webhook.url}/${kebab}` : webhook.url;
    const payload = {
      event,
      instance: account,
      data,
      destination: webhook.url,
      date_time: evolutionLocalIsoTime(new Date()),
      sender: `${current.wuid}@s.whatsapp.net`,
      server_url: SERVER_URL,
      apikey: null,
    };
    return {
      url,
      headers: {
        Accept: 'application/json, text/plain, */*',
        'Content-Type': 'application/json',
        'User-Agent': 'axios/1.7.9',
        ...webhook.headers,
      },
      body: JSON.stringify(payload),
    };
  }

  function inboundDelivery(message: InboundMessage): InboundDelivery | undefined {
    const kind = baileysKinds.of(message.type);
    const found = target(message.account, 'MESSAGES_UPSERT');
    if (!found) return undefined;
    const id = receivedMessageId();
    const key = messageKey(message, id, lidOf(message.account, message.from));
    const data = {
      key,
      // prepareMessage: the sender's profile name, else (in a group) the participant, else null.
      pushName: message.name ?? (key.participant ? key.participant.split('@')[0] : null),
      status: 'DELIVERY_ACK',
      ...baileysMessage(kind, message.text, key),
      messageTimestamp: unixSeconds(new Date()),
      instanceId: found.current.id,
      source: 'android',
    };
    return { ...callback(message.account, found, 'messages.upsert', data), providerMessageId: id };
  }

  function statusDelivery(update: StatusUpdate): WebhookDelivery | undefined {
    const sent = issued.get(update.messageId);
    if (!sent || sent.account !== update.account) {
      throw new ControlError(
        404,
        `message ${update.messageId} was not issued by ${CHANNEL} account ${update.account}`,
      );
    }
    const found = target(update.account, 'MESSAGES_UPDATE');
    if (!found) return undefined;
    // messages.update's own object; `messageId` is Evolution's database row, kept by default.
    return callback(update.account, found, 'messages.update', {
      keyId: update.messageId,
      remoteJid: sent.to.endsWith('@lid') ? sent.to : `${whatsappNumber(sent.to)}@s.whatsapp.net`,
      fromMe: true,
      status: ACKS[update.status],
      instanceId: found.current.id,
      messageId: cuid(),
    });
  }

  function webhooks(account?: string): WebhookRegistration[] {
    return [...instances]
      .filter(([name, { webhook }]) => webhook?.enabled && (account === undefined || name === account))
      .map(([name, { webhook }]) => ({
        channel: CHANNEL,
        account: name,
        url: webhook!.url,
        headers: webhook!.headers,
        events: webhook!.events,
      }));
  }

  // Evolution's manager, where an operator creates an instance and pairs its phone by the QR code.
  const controlRouter = Router();
  controlRouter.post('/alt-a/instances', (req, res) => {
    const { instance: name, token } = parseControl(instanceBody, req.body);
    const existing = instances.get(name);
    // instanceLoggedGuard: `This name "…" is already in use.`
    if (existing && existing.token !== token)
      throw new ControlError(403, `This name "${name}" is already in use.`);
    if (!existing) {
      instances.set(name, {
        id: randomUUID(),
        token,
        wuid: `55${randomDigits(11)}`,
        state: 'connected',
        known: new Set(),
      });
    }
    res.json({ ok: true, instance_id: instances.get(name)!.id });
  });

  return {
    channel: CHANNEL,
    router,
    controlRouter,
    inboundDelivery,
    statusDelivery,
    redelivery: evolutionRedelivery,
    setAccountState: (account, state) => {
      instance(account).state = state;
    },
    webhooks,
    rateLimited,
    reset: () => {
      instances.clear();
      issued.clear();
      lids.clear();
    },
  };
}

/**
 * The Baileys key of a received message. A contact under LID addressing is named by its LID, its number
 * in the `*Alt` jid (Baileys 7, which Evolution 2.3 runs); in a group the chat is the group and the
 * sender is `participant`.
 */
function messageKey(message: InboundMessage, id: string, lid: string): MessageKey {
  // The chat as WhatsApp names it, which for many Brazilian mobiles is not the number as written.
  const number = `${whatsappNumber(message.from)}@s.whatsapp.net`;
  const lidJid = `${lid}@lid`;
  const byLid = message.addressingMode === 'lid' || message.addressingMode === 'lid-only';
  if (message.groupId !== undefined) {
    return {
      remoteJid: `${message.groupId}@g.us`,
      fromMe: false,
      id,
      participant: byLid ? lidJid : number,
      ...(byLid ? { participantAlt: number, addressingMode: 'lid' } : {}),
    };
  }
  // WhatsApp may leave out the sender's number (sender_pn), and Baileys then has no other jid to give
  // (decode-wa-message.ts; Evolution issues #1872, #2217, #2337).
  if (message.addressingMode === 'lid-only')
    return { remoteJid: lidJid, fromMe: false, id, addressingMode: 'lid' };
  // Baileys 7 names the other jid of a one-to-one chat either way (decode-wa-message.ts). Under LID
  // addressing it gives the LID first and the number in remoteJidAlt, and Evolution 2.3.7 then writes the
  // number over the LID before it posts messages.upsert (whatsapp.baileys.service.ts, messages.upsert:
  // `messageRaw.key.remoteJid = messageRaw.key.remoteJidAlt`): the LID is gone, the number named twice.
  return byLid
    ? { remoteJid: number, fromMe: false, id, remoteJidAlt: number, addressingMode: 'lid' }
    : { remoteJid: number, fromMe: false, id, remoteJidAlt: lidJid, addressingMode: 'pn' };
}

interface MessageKey {
  remoteJid: string;
  fromMe: boolean;
  id: string;
  participant?: string;
  remoteJidAlt?: string;
  participantAlt?: string;
  addressingMode?: string;
}

function faultBody(status: number) {
  return evolutionError(status, ['sandbox fault'], STATUS_CODES[status]);
}

/** Baileys' ids of messages it sends: 3EB0 and 18 more upper-case hex characters. */
function sentMessageId(): string {
  return `3EB0${upperHexId(9)}`;
}

/** A phone's message id as Android clients mint them: 32 upper-case hex characters. */
function receivedMessageId(): string {
  return upperHexId(16);
}

/** Prisma's default ids (cuid): `c` and 24 lower-case base-36 characters. */
function cuid(): string {
  return `c${BigInt(`0x${upperHexId(16)}`)
    .toString(36)
    .padStart(24, '0')
    .slice(0, 24)}`;
}
