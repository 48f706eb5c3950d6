import { createHmac } from 'node:crypto';
import type { DeliveryStatus, WebhookDelivery } from './channel-emulator.js';
import { type InboundKind, messageFields } from './chat-official-inbound.js';
import { metaJson } from './meta-json.js';
import { unixSeconds } from './provider-ids.js';
import { whatsappNumber } from './whatsapp-number.js';

/** Where and how one phone number's notifications are posted. */
export interface Notifier {
  account: string;
  wabaId: string;
  url: string;
  appSecret: string;
}

export interface InboundText {
  from: string;
  name?: string;
  text: string;
  wamid: string;
  kind: InboundKind;
  /** The user's business-scoped user id. */
  userId: string;
  /** A user who adopted a username: Meta shows it, and omits their number. */
  username?: string;
}

/** The errors a `failed` status carries, as Meta words them in `statuses[].errors[]`. */
export const STATUS_ERRORS = {
  131026: {
    title: 'Message undeliverable',
    details:
      "Unable to deliver message. Reasons can include: the recipient phone number is not a WhatsApp phone number, or the recipient has not accepted WhatsApp's new Terms of Service and Privacy Policy.",
  },
  131047: {
    title: 'Re-engagement message',
    details:
      'Message failed to send because more than 24 hours have passed since the customer last replied to this number.',
  },
  131053: { title: 'Media upload error', details: 'Unable to upload the media used in the message.' },
} as const;
export type StatusErrorCode = keyof typeof STATUS_ERRORS;
export const STATUS_ERROR_CODES = Object.keys(STATUS_ERRORS).map(Number) as StatusErrorCode[];

export interface StatusChange {
  wamid: string;
  status: DeliveryStatus;
  recipient: string;
  /** Only for `failed`; 131026 when not given. */
  errorCode?: StatusErrorCode;
  /** Appended to the code's details, e.g. why a media link could not be fetched. */
  reason?: string;
  /** The `biz_opaque_callback_data` the message was sent with; every status of it carries it. */
  callbackData?: string;
  /** The BSUID a message was sent to: its statuses name the user by it, not by a number. */
  recipientUserId?: string;
}

/** One `changes[]` item: its `value` carries one kind of news for the phone number. */
type ChangeValue = Record<string, unknown>;

/**
 * A customer's message, as the `messages` field reports it: the sender's BSUID always (`user_id`,
 * `from_user_id`), their number unless they took a username, and no `contacts` for a system notice.
 */
export function inboundChange(message: InboundText, at: Date): ChangeValue {
  // Meta's `wa_id` is WhatsApp's id for the user, which "may not always match" the number (a Brazilian
  // mobile is often named without its ninth digit).
  const number = message.username === undefined ? whatsappNumber(message.from) : undefined;
  const contact = {
    profile: {
      name: message.name ?? '',
      ...(message.username === undefined ? {} : { username: message.username }),
    },
    ...(number === undefined ? {} : { wa_id: number }),
    user_id: message.userId,
  };
  return {
    ...(message.kind === 'system' ? {} : { contacts: [contact] }),
    messages: [
      {
        ...(number === undefined ? {} : { from: number }),
        from_user_id: message.userId,
        id: message.wamid,
        timestamp: String(unixSeconds(at)),
        ...messageFields(message.kind, message.text, message.from),
      },
    ],
  };
}

/** A change of an outbound message's status; a failure names its error as Meta does. */
export function statusChange(change: StatusChange, at: Date): ChangeValue {
  const code = change.errorCode ?? 131026;
  const { title, details } = STATUS_ERRORS[code];
  return {
    statuses: [
      {
        id: change.wamid,
        status: change.status,
        timestamp: String(unixSeconds(at)),
        ...(change.recipientUserId === undefined
          ? { recipient_id: change.recipient }
          : { recipient_user_id: change.recipientUserId }),
        ...(change.callbackData === undefined ? {} : { biz_opaque_callback_data: change.callbackData }),
        ...(change.status === 'failed'
          ? {
              errors: [
                {
                  code,
                  title,
                  message: title,
                  error_data: { details: change.reason ? `${details} ${change.reason}` : details },
                  href: 'https://developers.facebook.com/docs/whatsapp/cloud-api/support/error-codes/',
                },
              ],
            }
          : {}),
      },
    ],
  };
}

/**
 * The notification envelope around one or more changes (Meta batches: one POST may carry several), in
 * Meta's escaped serialisation, signed over exactly the bytes that will be sent.
 */
export function notification(notifier: Notifier, values: ChangeValue[]): WebhookDelivery {
  const body = metaJson({
    object: 'whatsapp_business_account',
    entry: [
      {
        id: notifier.wabaId,
        changes: values.map((value) => ({
          value: {
            messaging_product: 'whatsapp',
            metadata: { display_phone_number: notifier.account, phone_number_id: notifier.account },
            ...value,
          },
          field: 'messages',
        })),
      },
    ],
  });
  const signature = createHmac('sha256', notifier.appSecret).update(body, 'utf8').digest('hex');
  return {
    url: notifier.url,
    headers: { 'Content-Type': 'application/json', 'X-Hub-Signature-256': `sha256=${signature}` },
    body,
  };
}
