import { AppError, type ChannelConfig, platformTexts } from '@inbox/contracts';
import { sameSecret } from '@inbox/service-kit';
import { z } from 'zod';
import {
  type ChannelAdapter,
  type InboundBatch,
  type InboundMessage,
  InboundRejected,
  type ProviderCall,
  ProviderError,
  type StatusUpdate,
} from './channel-adapter.js';
import { callProvider, headerValue, joinUrl, type ProviderAnswer, retryAfterNote } from './http.js';
import { locationText } from './location-text.js';

// Facts about Z-API below are from its documentation (developer.z-api.io; github.com/Z-API/z-api-docs):
// webhooks/on-message-received (ReceivedCallback and its examples), webhooks/on-message-received-and-
// delivery, webhooks/on-whatsapp-message-status-changes (MessageStatusCallback), webhooks/on-message-send-
// examples (DeliveryCallback), webhooks/introduction, message/send-message-text, instance/status,
// security/client-token, queue/introduction.

type AltBConfig = ChannelConfig<'alt-b'>;
type Instance = { instance_id: string; token: string };

/**
 * Z-API signs nothing and takes no header of ours, so the callback URL registered with it carries the
 * integration's callback secret in this query parameter; the name has "token" in it, so traces redact its
 * value.
 */
export const ALT_B_CALLBACK_PARAM = 'callback_token';

/**
 * The header Z-API puts the instance's token in on every webhook: its docs show none, but the
 * integrations people write against it check this one. Whether Z-API keeps a webhook URL's query string
 * is documented nowhere, so a callback proves itself with either.
 */
export const ALT_B_TOKEN_HEADER = 'z-api-token';

function instanceOf(config: AltBConfig): Instance | undefined {
  return config.instance_id && config.token
    ? { instance_id: config.instance_id, token: config.token }
    : undefined;
}

function instancePath(instance: Instance, action: string): string {
  return `instances/${encodeURIComponent(instance.instance_id)}/token/${encodeURIComponent(instance.token)}/${action}`;
}

/** The account security token is optional on Z-API's side (off until the account turns it on). */
const clientToken = (config: AltBConfig): Record<string, string> =>
  config.client_token ? { 'client-token': config.client_token } : {};

const SendTextAnswer = z.object({ messageId: z.string().min(1) });
/** `GET /status`: `error` says why when not connected ("You need to restore the session.", ...). */
const InstanceStatus = z.object({ connected: z.boolean(), error: z.string().nullish() });

const flag = z.boolean().nullish();
// Zod 4 requires a key typed `unknown` unless it is marked optional.
const anything = z.unknown().optional();

const ReceivedCallback = z.object({
  // The docs' attribute table spells it "ReceivedCallBack"; every example, "ReceivedCallback".
  type: z.string().refine((type) => type.toLowerCase() === 'receivedcallback'),
  instanceId: z.string(),
  messageId: z.string().min(1),
  // The number, or a group (`…-group`), a broadcast list (`…-broadcast`) or a channel (`…@newsletter`);
  // or, for a contact WhatsApp names only by its LID, that LID (`…@lid`: docs, tips/lid.md, "phone: Can
  // contain the actual number or the @lid itself"), which sends take in `phone` as well.
  phone: z.string(),
  fromMe: flag,
  isGroup: flag,
  isNewsletter: flag,
  broadcast: flag,
  isStatusReply: flag,
  waitingMessage: flag,
  // Set on WhatsApp's system notices (a missed call, a member who left): not something anyone wrote.
  notification: z.string().nullish(),
  senderName: z.string().nullish(),
  // The contact's LID beside its number (`senderLid` in the docs' example, `chatLid` in callbacks seen in
  // the wild): what names them once WhatsApp gives no number.
  chatLid: z.string().nullish(),
  senderLid: z.string().nullish(),
  momment: z.number().nullish(),
  text: z.object({ message: z.string() }).nullish(),
  image: z.object({ caption: z.string().nullish() }).nullish(),
  video: z.object({ caption: z.string().nullish() }).nullish(),
  audio: z.object({}).nullish(),
  document: z.object({ caption: z.string().nullish(), fileName: z.string().nullish() }).nullish(),
  // Its docs show `longitude`, `latitude`, `address` and `url`; `name` is read should a version send it.
  location: z
    .object({ name: anything, address: anything, latitude: anything, longitude: anything })
    .nullish(),
  reaction: z.object({ value: z.string().nullish() }).nullish(),
  buttonsResponseMessage: z.object({ message: z.string().nullish() }).nullish(),
  listResponseMessage: z.object({ title: z.string().nullish(), message: z.string().nullish() }).nullish(),
});
type Received = z.infer<typeof ReceivedCallback>;

const MessageStatusCallback = z.object({
  type: z.literal('MessageStatusCallback'),
  instanceId: z.string(),
  status: z.string(),
  ids: z.array(z.string().min(1)),
  isGroup: flag,
});

/**
 * The on-send webhook's callback, one per message the instance sent or failed to send: `error` is
 * "present only in error cases" ("Phone number does not exist", "Timeout on send message", ...), with
 * `errorCode` "SHADOW_BAN" when WhatsApp restricts the number for a while. A send that failed is told only
 * here: MessageStatusCallback has no failed status.
 */
const DeliveryCallback = z.object({
  type: z.literal('DeliveryCallback'),
  instanceId: z.string(),
  messageId: z.string().min(1),
  error: z.string().nullish(),
  errorCode: z.string().nullish(),
});

/** READ_BY_ME (or READ-SELF) is the instance reading the contact's message: not a status of ours. */
const statuses: Record<string, StatusUpdate['status']> = {
  SENT: 'sent',
  RECEIVED: 'delivered',
  READ: 'read',
  PLAYED: 'read',
};

const empty = (): InboundBatch => ({ messages: [], statuses: [] });

function failure(what: string, answer: ProviderAnswer): ProviderError {
  const error = (answer.body as { error?: unknown } | null)?.error;
  const said = typeof error === 'string' ? `: ${error}` : '';
  return new ProviderError(
    `alt-b answered ${answer.status} to ${what}${said}${retryAfterNote(answer)}`,
    answer.status,
  );
}

/**
 * A disconnected instance still takes sends: Z-API queues them (up to 1000) and sends them whenever the
 * phone reconnects, which its docs warn may be when they no longer make sense. A send is refused here
 * instead, with the reason, while the instance is not connected.
 */
async function requireConnected(config: AltBConfig, instance: Instance, call: ProviderCall) {
  const answer = await callProvider(
    call,
    'alt-b',
    joinUrl(config.base_url, instancePath(instance, 'status')),
    {
      method: 'GET',
      headers: clientToken(config),
    },
  );
  if (!answer.ok) throw failure('status', answer);
  const status = InstanceStatus.safeParse(answer.body);
  if (status.success && !status.data.connected) {
    throw new ProviderError(
      `alt-b instance is not connected to WhatsApp: ${status.data.error ?? 'not connected'}`,
      answer.status,
    );
  }
}

/**
 * What a received message says. A tap on a button or a list row is the contact answering with its label;
 * a reaction is its emoji, and one taken back (no emoji) is no message. Undefined for no message.
 */
function content(received: Received): Pick<InboundMessage, 'text' | 'type'> | undefined {
  if (received.text) return { text: received.text.message, type: 'text' };
  if (received.buttonsResponseMessage?.message)
    return { text: received.buttonsResponseMessage.message, type: 'text' };
  const row = received.listResponseMessage;
  if (row?.title || row?.message) return { text: row.title || row.message || '', type: 'text' };
  if (received.reaction)
    return received.reaction.value ? { text: received.reaction.value, type: 'others' } : undefined;
  if (received.image) return { text: received.image.caption ?? '', type: 'image' };
  if (received.video) return { text: received.video.caption ?? '', type: 'video' };
  if (received.audio) return { text: '', type: 'audio' };
  if (received.document)
    return { text: received.document.caption ?? received.document.fileName ?? '', type: 'document' };
  if (received.location) return { text: locationText(received.location), type: 'location' };
  return { text: '', type: 'others' };
}

/** Only a contact's own message in a one-to-one chat with a number is a customer conversation. */
function isCustomerMessage(received: Received): boolean {
  const notOneToOne =
    received.isGroup || received.isNewsletter || received.broadcast || received.isStatusReply;
  return (
    !notOneToOne &&
    !received.fromMe &&
    !received.waitingMessage &&
    !received.notification &&
    (/^\d{6,20}$/.test(received.phone) || LID.test(received.phone))
  );
}

/** A contact named by its LID only: no number can be had for it, so its contact is keyed by the LID. */
const LID = /^\d{6,20}@lid$/;

/** alt-b speaks Z-API: instance id and token in the path, the optional `Client-Token` header. */
export const altBAdapter: ChannelAdapter<'alt-b'> = {
  channel: 'alt-b',

  async sendText(config, message, call) {
    const instance = instanceOf(config);
    if (!instance) throw new AppError(500, { error: platformTexts.altBCredentialsIncomplete });
    await requireConnected(config, instance, call);
    const answer = await callProvider(
      call,
      'alt-b',
      joinUrl(config.base_url, instancePath(instance, 'send-text')),
      { method: 'POST', headers: clientToken(config), body: { phone: message.to, message: message.text } },
    );
    if (!answer.ok) throw failure('send-text', answer);
    const parsed = SendTextAnswer.safeParse(answer.body);
    if (!parsed.success) throw new ProviderError('alt-b answered without a message id', answer.status);
    return { providerMessageId: parsed.data.messageId };
  },

  /**
   * Received messages, the statuses of ours and the outcome of each send, all to the one URL: each
   * callback names its `type`. Received messages are registered twice: once "on message received - sent
   * by me" is set, Z-API sends them there and no longer to the received webhook, so an account that had it
   * set by another system would keep our integration from hearing its customers. It also brings the
   * instance's own messages (`fromMe`), which are not taken in.
   */
  async registerInbound(config, callbackUrl, call) {
    const instance = instanceOf(config);
    // Nothing to register with yet; sends will answer the incomplete-credentials error.
    if (!instance) return;
    if (!config.callback_secret) throw new Error('alt-b integration has no callback secret');
    const url = new URL(callbackUrl);
    url.searchParams.set(ALT_B_CALLBACK_PARAM, config.callback_secret);
    for (const webhook of [
      'update-webhook-received',
      'update-webhook-received-delivery',
      'update-webhook-message-status',
      'update-webhook-delivery',
    ]) {
      const answer = await callProvider(
        call,
        'alt-b',
        joinUrl(config.base_url, instancePath(instance, webhook)),
        {
          method: 'PUT',
          headers: clientToken(config),
          body: { value: url.toString() },
        },
      );
      if (!answer.ok) throw failure(webhook, answer);
    }
  },

  // An instance has one URL per webhook, each update-webhook-* replacing it.
  oneCallbackPerAccount: true,

  // Z-API calls only HTTPS webhook URLs (developer.z-api.io, webhooks introduction).
  callbackUrlRules: { httpsOnly: true },

  // Its docs describe no redelivery of a webhook that failed, and a Multi Device instance keeps no
  // messages to fetch later: a callback refused or answered late is lost.
  callbackIntake: 'kept',

  readInbound(config, request) {
    const inUrl = request.query?.[ALT_B_CALLBACK_PARAM];
    const byUrl =
      !!config.callback_secret &&
      sameSecret(typeof inUrl === 'string' ? inUrl : undefined, config.callback_secret);
    const byHeader =
      !!config.token && sameSecret(headerValue(request.headers, ALT_B_TOKEN_HEADER), config.token);
    if (!byUrl && !byHeader) throw new InboundRejected('alt-b callback token missing or wrong');
    const body: unknown = JSON.parse(request.rawBody.toString('utf8'));
    const received = ReceivedCallback.safeParse(body);
    if (received.success) return readReceived(config, received.data);
    const status = MessageStatusCallback.safeParse(body);
    if (status.success) return readStatus(config, status.data);
    const sent = DeliveryCallback.safeParse(body);
    if (sent.success) return readDelivery(config, sent.data);
    // Presence, connection and other callbacks carry nothing we keep.
    return empty();
  },
};

function requireInstance(config: AltBConfig, instanceId: string) {
  if (instanceId !== config.instance_id) throw new InboundRejected('alt-b callback names another instance');
}

function readReceived(config: AltBConfig, received: Received): InboundBatch {
  requireInstance(config, received.instanceId);
  if (!isCustomerMessage(received)) return empty();
  const said = content(received);
  if (!said) return empty();
  const name = received.senderName?.trim();
  const byLid = LID.test(received.phone);
  // One-to-one chats only reach here: the sender is the chat's contact.
  const lidBeside = [received.chatLid, received.senderLid].find((lid) => lid && LID.test(lid));
  return {
    messages: [
      {
        providerMessageId: received.messageId,
        from: received.phone,
        ...(byLid ? { keyedBy: 'user_id' as const } : lidBeside ? { userId: lidBeside } : {}),
        // With no profile name, Z-API repeats the number (or the LID) as the sender's name.
        name: name && name !== received.phone && name !== received.phone.replace(/@lid$/, '') ? name : null,
        ...said,
        sentAt: received.momment ? new Date(received.momment) : new Date(),
      },
    ],
    statuses: [],
  };
}

function readStatus(config: AltBConfig, callback: z.infer<typeof MessageStatusCallback>): InboundBatch {
  requireInstance(config, callback.instanceId);
  const status = statuses[callback.status];
  if (!status || callback.isGroup) return empty();
  return {
    messages: [],
    statuses: callback.ids.map((id) => ({ providerMessageId: id, status, error: null })),
  };
}

/** A send that failed is a failed status; one that went is told by MessageStatusCallback's SENT. */
function readDelivery(config: AltBConfig, callback: z.infer<typeof DeliveryCallback>): InboundBatch {
  requireInstance(config, callback.instanceId);
  if (!callback.error) return empty();
  const error = callback.errorCode ? `${callback.errorCode}: ${callback.error}` : callback.error;
  return {
    messages: [],
    statuses: [{ providerMessageId: callback.messageId, status: 'failed', error }],
  };
}
