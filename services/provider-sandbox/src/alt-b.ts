import { setTimeout as pause } from 'node:timers/promises';
import { gzipSync } from 'node:zlib';
import { type NextFunction, type Request, type Response, Router } from 'express';
import { z } from 'zod';
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
import { OwnAccordPosts } from './own-accord-posts.js';
import { randomDigits, upperHexId } from './provider-ids.js';
import type { SentEntry } from './sent-log.js';
import { deliverWebhook } from './webhook-transport.js';
import { whatsappNumber } from './whatsapp-number.js';
import { zapiContent, zapiKinds } from './zapi-messages.js';

// Emulates Z-API, the provider behind the `alt-b` channel, from its documentation (developer.z-api.io;
// github.com/Z-API/z-api-docs): security/client-token, message/send-message-text, instance/status,
// queue/introduction, webhooks/on-message-received (ReceivedCallback and its examples),
// webhooks/on-message-received-and-delivery, webhooks/on-whatsapp-message-status-changes
// (MessageStatusCallback) and webhooks/on-message-send-examples (DeliveryCallback).
const CHANNEL = 'alt-b';

/**
 * Z-API binds two secrets to an instance: the token in the path and the account-wide `Client-Token`
 * header. The credential book keeps one secret per channel and account, so the path token lives under
 * its own name.
 */
const INSTANCE_TOKEN_BOOK = `${CHANNEL}/instance-token`;

const INSTANCE_PATH = '/instances/:instanceId/token/:token';

type InstanceParams = { instanceId: string; token: string };

/**
 * Each webhook Z-API lets an instance set, and the callbacks its URL then receives. Received messages go
 * to "on message received - sent by me" (`received-delivery`, which also takes the instance's own
 * messages) once it is set: "the API automatically starts giving priority to the URL configured there",
 * the received one staying saved but no longer used (webhooks/on-message-received-and-delivery).
 */
const WEBHOOKS = {
  'update-webhook-received': { name: 'received', events: ['ReceivedCallback'] },
  'update-webhook-received-delivery': {
    name: 'received-delivery',
    events: ['ReceivedCallback', 'ReceivedCallback fromMe'],
  },
  'update-webhook-message-status': { name: 'message-status', events: ['MessageStatusCallback'] },
  'update-webhook-delivery': { name: 'delivery', events: ['DeliveryCallback'] },
} as const;
type WebhookPath = keyof typeof WEBHOOKS;
type WebhookName = (typeof WEBHOOKS)[WebhookPath]['name'];
const eventsOf = new Map<WebhookName, readonly string[]>(
  Object.values(WEBHOOKS).map(({ name, events }) => [name, events]),
);

/** instance/status's `error` for each state that is not connected. */
const NOT_CONNECTED: Record<Exclude<AccountState, 'connected'>, string> = {
  disconnected: 'You need to restore the session.',
  logged_out: 'You are not connected.',
};

/** MessageStatusCallback's statuses; a failed send is told by DeliveryCallback's `error`, not here. */
const STATUS_NAMES = { sent: 'SENT', delivered: 'RECEIVED', read: 'READ' } as const;

/** An error DeliveryCallback's `error` takes (on-message-send-examples): a number with no WhatsApp. */
const SEND_ERROR = 'Phone number does not exist';

const sendTextBody = z.object(
  {
    phone: z
      .string({
        error: (issue) => (issue.input === undefined ? 'phone is required' : 'phone must be a string'),
      })
      // A number, or a contact's LID: "It is possible to send messages directly to an @lid" (tips/lid.md).
      .regex(/^\d+(@lid)?$/, 'phone must contain digits only, or be an @lid'),
    message: z
      .string({
        error: (issue) => (issue.input === undefined ? 'message is required' : 'message must be a string'),
      })
      .min(1, 'message must not be empty'),
  },
  { error: 'body must be a JSON object' },
);

const updateWebhookBody = z.object(
  { value: z.url({ protocol: /^https?$/, error: 'value must be an http(s) URL' }) },
  { error: 'body must be a JSON object' },
);

interface Instance {
  webhooks: Map<WebhookName, string>;
  state: AccountState;
  /** Sends taken while not connected, sent (and logged) when the instance connects again. */
  queue: SentEntry[];
  /** The number connected to the instance (`connectedPhone`). */
  phone: string;
}

/** What the sandbox keeps of each send it answered. */
interface Issued {
  account: string;
  to: string;
  zaapId: string;
}

/** How long after a send's answer the DeliveryCallback of its failure is posted. */
const SEND_FAILURE_PAUSE_MS = 250;

export function createAltB(stores: SandboxStores, fetchImpl: typeof fetch): ChannelEmulator {
  const instances = new Map<string, Instance>();
  /** Messages this provider issued, so statuses are only told of its own, to the instance that sent them. */
  const issued = new IssuedMessages<Issued>(stores.sent.limit);
  /** DeliveryCallbacks of failed sends, posted a moment after the send. */
  const late = new OwnAccordPosts();
  /** WhatsApp's LID of each contact, stable per instance (`senderLid`). */
  const lids = new Map<string, string>();
  const router = Router();
  router.use(jsonBody);

  const instance = (id: string): Instance => {
    let found = instances.get(id);
    if (!found) {
      found = { webhooks: new Map(), state: 'connected', queue: [], phone: `55${randomDigits(11)}` };
      instances.set(id, found);
    }
    return found;
  };
  const lidOf = (account: string, number: string): string => {
    const key = `${account}:${number}`;
    if (!lids.has(key)) lids.set(key, randomDigits(14));
    return `${lids.get(key)}@lid`;
  };

  /**
   * Credentials come before anything else. The account security token is off until the account turns
   * it on, so a call without `Client-Token` passes; the sandbox takes the first one it sees as turned on,
   * and from then on refuses its absence with the documented `null not allowed`. Z-API documents no
   * answer for a wrong token of either kind; the sandbox answers in the shape of its documented refusals
   * (`"<value> not allowed"`), with 401.
   */
  function requireTokens(req: Request<InstanceParams>, res: Response, next: NextFunction): void {
    const { instanceId, token } = req.params;
    const clientToken = req.get('client-token') || undefined;
    const refusal = !stores.credentials.accept(INSTANCE_TOKEN_BOOK, instanceId, token)
      ? token
      : clientToken === undefined
        ? stores.credentials.get(CHANNEL, instanceId) === undefined
          ? undefined
          : 'null'
        : stores.credentials.accept(CHANNEL, instanceId, clientToken)
          ? undefined
          : clientToken;
    if (refusal !== undefined) {
      res.status(401).json({ error: `${refusal} not allowed` });
      return;
    }
    next();
  }

  router.post(`${INSTANCE_PATH}/send-text`, requireTokens, (req: Request<InstanceParams>, res) => {
    const { instanceId } = req.params;
    const fault = stores.faults.find(CHANNEL, instanceId);
    if (fault) {
      answerFault(fault, res, () => ({ error: 'Internal server error' }), stores.faultHoldMs);
      return;
    }
    const parsed = sendTextBody.safeParse(req.body);
    if (!parsed.success) {
      res.status(400).json({ error: parsed.error.issues.map((issue) => issue.message).join('; ') });
      return;
    }
    const messageId = whatsappId();
    const zaapId = upperHexId(16);
    const entry: SentEntry = {
      channel: CHANNEL,
      account: instanceId,
      to: parsed.data.phone,
      method: req.method,
      path: `${req.baseUrl}${req.path}`,
      body: req.body,
      provider_message_id: messageId,
      received_at: new Date().toISOString(),
    };
    issued.set(messageId, { account: instanceId, to: parsed.data.phone, zaapId });
    // Z-API queues every send and answers at once; a phone that is not connected sends its queue later.
    const current = instance(instanceId);
    if (current.state === 'connected') sendFromQueue(current, entry);
    else current.queue.push(entry);
    res.json({ zaapId, messageId, id: messageId });
  });

  router.get(`${INSTANCE_PATH}/status`, requireTokens, (req: Request<InstanceParams>, res) => {
    const { state } = instance(req.params.instanceId);
    res.json(
      state === 'connected'
        ? { connected: true, error: 'You are already connected.', smartphoneConnected: true }
        : { connected: false, error: NOT_CONNECTED[state], smartphoneConnected: false },
    );
  });

  // Z-API only calls HTTPS webhooks (every webhook page says so, not how it refuses others); the sandbox
  // takes http too, so that local runs receive, and the connector warns when its URL is http.
  for (const [path, { name }] of Object.entries(WEBHOOKS)) {
    router.put(`${INSTANCE_PATH}/${path}`, requireTokens, (req: Request<InstanceParams>, res) => {
      const parsed = updateWebhookBody.safeParse(req.body);
      if (!parsed.success) {
        res.status(400).json({ error: parsed.error.issues.map((issue) => issue.message).join('; ') });
        return;
      }
      instance(req.params.instanceId).webhooks.set(name, parsed.data.value);
      res.json({ value: true });
    });
  }

  function requireConnected(account: string): Instance {
    const current = instance(account);
    if (current.state !== 'connected') {
      throw new ControlError(
        409,
        `${CHANNEL} account ${account} is ${current.state}: WhatsApp tells it nothing`,
      );
    }
    return current;
  }

  /**
   * Z-API signs nothing; each webhook carries the instance's token in a `z-api-token` header (the docs
   * show no headers; the integrations people write against it check that one), beside the JSON content
   * type. Since November 2024 its webhooks arrive gzipped, with `Content-Encoding: gzip`
   * (github.com/Z-API/z-api-gzip-decompress: "os dados dos webhooks do Z-API, que agora chegam no formato
   * GZIP").
   */
  const delivery = (account: string, url: string, payload: unknown): WebhookDelivery => {
    const token = stores.credentials.get(INSTANCE_TOKEN_BOOK, account);
    return {
      url,
      headers: {
        'Content-Type': 'application/json',
        'Content-Encoding': 'gzip',
        ...(token === undefined ? {} : { 'z-api-token': token }),
      },
      body: gzipSync(JSON.stringify(payload)),
    };
  };

  function inboundDelivery(message: InboundMessage): InboundDelivery | undefined {
    const kind = zapiKinds.of(message.type);
    if (message.addressingMode === 'lid-only')
      throw new ControlError(400, `${CHANNEL} names a contact with no number by its LID alone: use lid`);
    const current = requireConnected(message.account);
    const url = current.webhooks.get('received-delivery') ?? current.webhooks.get('received');
    if (!url) return undefined;
    const messageId = upperHexId(16);
    const lid = lidOf(message.account, message.from);
    // The number as WhatsApp names the account: real callbacks name many Brazilian mobiles in area codes
    // 31 and above by eight digits, as Evolution does.
    const number = whatsappNumber(message.from);
    // With no profile name the name fields hold what names the contact: its number, or its LID's digits.
    const shown = message.addressingMode === 'lid' ? lid.replace(/@lid$/, '') : number;
    const group = message.groupId;
    // The docs' text example, field for field. With no profile name, the name fields hold the number.
    const payload = {
      isStatusReply: false,
      senderLid: lid,
      connectedPhone: current.phone,
      waitingMessage: false,
      isEdit: false,
      isGroup: group !== undefined,
      isNewsletter: false,
      instanceId: message.account,
      messageId,
      // WhatsApp may name a contact by its LID alone, in `phone` too (docs, tips/lid.md).
      phone: group !== undefined ? `${group}-group` : message.addressingMode === 'lid' ? lid : number,
      chatLid: group === undefined ? lid : null,
      fromMe: false,
      momment: Date.now(),
      status: 'RECEIVED',
      chatName: group === undefined ? (message.name ?? shown) : 'Grupo',
      senderPhoto: null,
      senderName: message.name ?? shown,
      participantPhone: group === undefined ? null : number,
      participantLid: group === undefined ? null : lid,
      photo: null,
      broadcast: false,
      type: 'ReceivedCallback',
      ...zapiContent(kind, message.text, number),
    };
    return { ...delivery(message.account, url, payload), providerMessageId: messageId };
  }

  /** The on-send webhook's DeliveryCallback for a send WhatsApp would not take. */
  function sendFailed(current: Instance, messageId: string, sent: Issued): WebhookDelivery | undefined {
    const url = current.webhooks.get('delivery');
    if (!url) return undefined;
    return delivery(sent.account, url, {
      phone: whatsappNumber(sent.to),
      messageId,
      instanceId: sent.account,
      zaapId: sent.zaapId,
      momment: Date.now(),
      type: 'DeliveryCallback',
      error: SEND_ERROR,
    });
  }

  /**
   * Z-API answers every send at once and sends it from its queue; a number with no WhatsApp is told a
   * moment later, by the on-send webhook alone.
   */
  function sendFromQueue(current: Instance, entry: SentEntry): void {
    stores.sent.record(entry);
    if (!stores.withoutWhatsApp.has(entry.to)) return;
    const sent = issued.get(entry.provider_message_id);
    if (!sent) return;
    late.schedule(async (stillCurrent) => {
      await pause(SEND_FAILURE_PAUSE_MS, undefined, { ref: false });
      const failed = stillCurrent() ? sendFailed(current, entry.provider_message_id, sent) : undefined;
      if (failed) await deliverWebhook(fetchImpl, failed);
    });
  }

  function statusDelivery(update: StatusUpdate): WebhookDelivery | undefined {
    const sent = issued.get(update.messageId);
    if (!sent || sent.account !== update.account) {
      throw new ControlError(
        404,
        `message ${update.messageId} was not issued by ${CHANNEL} account ${update.account}`,
      );
    }
    const current = requireConnected(update.account);
    // MessageStatusCallback reports SENT, RECEIVED, READ and PLAYED; a send that failed is told by the
    // on-send webhook's DeliveryCallback, whose `error` is "present only in error cases".
    if (update.status === 'failed') return sendFailed(current, update.messageId, sent);
    const url = current.webhooks.get('message-status');
    if (!url) return undefined;
    return delivery(update.account, url, {
      instanceId: update.account,
      status: STATUS_NAMES[update.status],
      ids: [update.messageId],
      momment: Date.now(),
      phoneDevice: 0,
      phone: whatsappNumber(sent.to),
      type: 'MessageStatusCallback',
      isGroup: false,
    });
  }

  function setAccountState(account: string, state: AccountState): void {
    const current = instance(account);
    current.state = state;
    if (state !== 'connected') return;
    for (const entry of current.queue.splice(0)) {
      sendFromQueue(current, { ...entry, received_at: new Date().toISOString() });
    }
  }

  function webhooks(account?: string): WebhookRegistration[] {
    return [...instances]
      .filter(([id]) => account === undefined || id === account)
      .flatMap(([id, { webhooks }]) =>
        [...webhooks].map(([name, url]) => ({
          channel: CHANNEL,
          account: id,
          url,
          headers: {},
          events: [...(eventsOf.get(name) ?? [])],
        })),
      );
  }

  return {
    channel: CHANNEL,
    router,
    inboundDelivery,
    statusDelivery,
    setAccountState,
    webhooks,
    idle: () => late.idle(),
    reset: () => {
      late.reset();
      instances.clear();
      issued.clear();
      lids.clear();
    },
  };
}

/** A WhatsApp message id as Z-API's examples show them: 20 upper-case hex characters. */
function whatsappId(): string {
  return `3EB0${upperHexId(8)}`;
}
