import { STATUS_CODES } from 'node:http';

// How Evolution API v2 refuses requests (src/main.ts, src/exceptions, src/api/abstract/abstract.router.ts
// dataValidate): `{ status, error, response: { message } }`. Body problems come from the `jsonschema`
// library, each a schema's `description` when it has one, else the error's stack with its leading
// "instance." removed, so a missing top-level field keeps the word: `instance requires property "text"`.

/** EventController.events, which `webhook.events` must be drawn from. */
export const EVOLUTION_EVENTS = [
  'APPLICATION_STARTUP',
  'QRCODE_UPDATED',
  'MESSAGES_SET',
  'MESSAGES_UPSERT',
  'MESSAGES_EDITED',
  'MESSAGES_UPDATE',
  'MESSAGES_DELETE',
  'SEND_MESSAGE',
  'SEND_MESSAGE_UPDATE',
  'CONTACTS_SET',
  'CONTACTS_UPSERT',
  'CONTACTS_UPDATE',
  'PRESENCE_UPDATE',
  'CHATS_SET',
  'CHATS_UPSERT',
  'CHATS_UPDATE',
  'CHATS_DELETE',
  'GROUPS_UPSERT',
  'GROUP_UPDATE',
  'GROUP_PARTICIPANTS_UPDATE',
  'CONNECTION_UPDATE',
  'LABELS_EDIT',
  'LABELS_ASSOCIATION',
  'CALL',
  'TYPEBOT_START',
  'TYPEBOT_CHANGE_STATUS',
  'REMOVE_INSTANCE',
  'LOGOUT_INSTANCE',
  'INSTANCE_CREATE',
  'INSTANCE_DELETE',
  'STATUS_INSTANCE',
] as const;

export function evolutionError(status: number, message: unknown, error = STATUS_CODES[status]) {
  return { status, error: error ?? 'Internal Server Error', response: { message } };
}

export const badRequest = (messages: unknown[]) => evolutionError(400, messages, 'Bad Request');
export const unauthorized = () => evolutionError(401, 'Unauthorized', 'Unauthorized');

type Checked<T> = ({ ok: true } & T) | { ok: false; problems: string[] };

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const notOfType = (path: string, type: string) => `${path} is not of a type(s) ${type}`;

/** textMessageSchema (message.schema.ts), then textMessage's own check; `number` is cleaned as createJid does. */
export function checkSendText(body: unknown): Checked<{ number: string; digits: string; text: string }> {
  if (!isObject(body)) return { ok: false, problems: [notOfType('instance', 'object')] };
  const problems: string[] = [];
  // Property checks come first, in the schema's order, then the required ones.
  if ('number' in body && typeof body.number !== 'string') problems.push('Invalid format');
  if ('text' in body && typeof body.text !== 'string') problems.push(notOfType('text', 'string'));
  if ('linkPreview' in body && typeof body.linkPreview !== 'boolean')
    problems.push(notOfType('linkPreview', 'boolean'));
  if ('delay' in body && !Number.isInteger(body.delay)) problems.push('Enter a value in milliseconds');
  for (const field of ['number', 'text']) {
    if (!(field in body)) problems.push(`instance requires property "${field}"`);
  }
  if (problems.length > 0) return { ok: false, problems };
  const number = body.number as string;
  const text = body.text as string;
  if (text.trim().length === 0) return { ok: false, problems: ['Text is required'] };
  return { ok: true, number, digits: number.split('@')[0]!.split(':')[0]!.replace(/\D/g, ''), text };
}

/**
 * A number's digits as Evolution's createJid writes them (utils/createJid.ts): a Mexican or Argentine
 * number of 13 digits loses its third (formatMXOrARNumber), then a Brazilian one of 13 loses its fifth when
 * its area code is 31 or above and the rest starts with 7 to 9 (formatBRNumber). It is the JID Evolution
 * names when WhatsApp's check finds no account: the check's own JID is WhatsApp's (`whatsappNumber`).
 */
export function createJidDigits(digits: string): string {
  const number = /^5[24]\d{11}$/.test(digits) ? digits.slice(0, 2) + digits.slice(3) : digits;
  const brazilian = /^55(\d{2})\d(\d{8})$/.exec(number);
  if (brazilian && Number(brazilian[1]) >= 31 && Number(brazilian[2]![0]) >= 7)
    return `55${brazilian[1]}${brazilian[2]}`;
  return number;
}

/**
 * sendMessageWithTyping's refusal when WhatsApp's check finds no account: its OnWhatsAppDto, `{ jid,
 * exists: false, number }`, `number` as the body gave it.
 */
export const notOnWhatsApp = (number: string, digits: string) =>
  badRequest([{ jid: `${createJidDigits(digits)}@s.whatsapp.net`, exists: false, number }]);

export interface WebhookSettings {
  enabled: boolean;
  url: string;
  headers: Record<string, string>;
  byEvents: boolean;
  base64: boolean;
  events: string[];
}

/** webhookSchema (webhook.schema.ts): v2's names; `webhookByEvents`/`webhookBase64` are v1's and ignored. */
export function checkSetWebhook(body: unknown): Checked<{ webhook: WebhookSettings }> {
  if (!isObject(body)) return { ok: false, problems: [notOfType('instance', 'object')] };
  const webhook = body.webhook;
  if (webhook === undefined) return { ok: false, problems: ['instance requires property "webhook"'] };
  if (!isObject(webhook)) return { ok: false, problems: [notOfType('webhook', 'object')] };
  const problems: string[] = [];
  if ('enabled' in webhook && typeof webhook.enabled !== 'boolean')
    problems.push(notOfType('webhook.enabled', 'boolean'));
  if ('url' in webhook && typeof webhook.url !== 'string') problems.push(notOfType('webhook.url', 'string'));
  if ('headers' in webhook && !isObject(webhook.headers))
    problems.push(notOfType('webhook.headers', 'object'));
  for (const flag of ['byEvents', 'base64']) {
    if (flag in webhook && typeof webhook[flag] !== 'boolean')
      problems.push(notOfType(`webhook.${flag}`, 'boolean'));
  }
  const events = webhook.events ?? [];
  if (!Array.isArray(events)) problems.push(notOfType('webhook.events', 'array'));
  else
    events.forEach((event, index) => {
      if (!(EVOLUTION_EVENTS as readonly unknown[]).includes(event)) {
        problems.push(`webhook.events[${index}] is not one of enum values: ${EVOLUTION_EVENTS.join(',')}`);
      }
    });
  for (const field of ['enabled', 'url']) {
    if (!(field in webhook)) problems.push(`webhook requires property "${field}"`);
  }
  if (webhook.url === '') problems.push('The "url" cannot be empty');
  if (problems.length > 0) return { ok: false, problems };
  return {
    ok: true,
    webhook: {
      enabled: webhook.enabled as boolean,
      url: webhook.url as string,
      headers: Object.fromEntries(
        Object.entries((webhook.headers ?? {}) as Record<string, unknown>).map(([name, value]) => [
          name,
          String(value),
        ]),
      ),
      byEvents: webhook.byEvents === true,
      base64: webhook.base64 === true,
      events: events as string[],
    },
  };
}
