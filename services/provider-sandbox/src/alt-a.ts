import { STATUS_CODES } from 'node:http';
import { type NextFunction, type Request, type Response, Router } from 'express';
import { z } from 'zod';
import type { ChannelEmulator, InboundDelivery, InboundMessage, SandboxStores } from './channel-emulator.js';
import { ControlError } from './control-error.js';
import { answerFault } from './faults.js';
import { jsonBody } from './json-body.js';
import { unixSeconds, upperHexId } from './provider-ids.js';

/** Emulates Evolution API v2, the provider behind the `alt-a` channel. */
const CHANNEL = 'alt-a';

const UPSERT_EVENT = 'MESSAGES_UPSERT';
/** Evolution appends the kebab-cased event to the URL when a webhook is set "by events". */
const UPSERT_EVENT_PATH = 'messages-upsert';

interface WebhookRegistration {
  url: string;
  events: string[];
  byEvents: boolean;
}

const sendTextBody = z.object(
  {
    number: z
      .string({
        error: (issue) => (issue.input === undefined ? 'number is required' : 'number must be a string'),
      })
      .regex(/^\d+$/, 'number must contain digits only'),
    text: z
      .string({
        error: (issue) => (issue.input === undefined ? 'text is required' : 'text must be a string'),
      })
      .min(1, 'text should not be empty'),
    delay: z
      .number({ error: 'delay must be a number' })
      .int('delay must be an integer')
      .nonnegative()
      .optional(),
    linkPreview: z.boolean({ error: 'linkPreview must be a boolean' }).optional(),
  },
  { error: 'body must be a JSON object' },
);

const setWebhookBody = z.object(
  {
    webhook: z.object(
      {
        enabled: z.boolean({ error: 'webhook.enabled must be a boolean' }),
        url: z.url({ error: 'webhook.url must be a URL' }),
        events: z.array(z.string(), { error: 'webhook.events must be an array of strings' }),
        webhookByEvents: z.boolean({ error: 'webhook.webhookByEvents must be a boolean' }).default(false),
        webhookBase64: z.boolean({ error: 'webhook.webhookBase64 must be a boolean' }).default(false),
      },
      { error: 'webhook is required' },
    ),
  },
  { error: 'body must be a JSON object' },
);

export function createAltA(stores: SandboxStores): ChannelEmulator {
  const webhooks = new Map<string, WebhookRegistration>();
  const router = Router();
  router.use(jsonBody);

  // Evolution checks the apikey before anything else, including whether the body makes sense.
  function requireApiKey(req: Request<{ instance: string }>, res: Response, next: NextFunction): void {
    const apiKey = req.get('apikey');
    if (!apiKey || !stores.credentials.accept(CHANNEL, req.params.instance, apiKey)) {
      res.status(401).json(unauthorized());
      return;
    }
    next();
  }

  router.post('/message/sendText/:instance', requireApiKey, (req: Request<{ instance: string }>, res) => {
    const { instance } = req.params;
    const fault = stores.faults.find(CHANNEL, instance);
    if (fault) {
      answerFault(fault, res, providerError, stores.faultHoldMs);
      return;
    }
    const parsed = sendTextBody.safeParse(req.body);
    if (!parsed.success) {
      res.status(400).json(badRequest(parsed.error.issues.map((issue) => issue.message)));
      return;
    }
    const { number, text } = parsed.data;
    const now = new Date();
    const id = messageId();
    stores.sent.record({
      channel: CHANNEL,
      account: instance,
      to: number,
      method: req.method,
      path: `${req.baseUrl}${req.path}`,
      body: req.body,
      provider_message_id: id,
      received_at: now.toISOString(),
    });
    res.status(201).json({
      key: { remoteJid: jid(number), fromMe: true, id },
      pushName: '',
      status: 'PENDING',
      message: { conversation: text },
      messageType: 'conversation',
      messageTimestamp: unixSeconds(now),
      instanceId: instance,
      source: 'unknown',
    });
  });

  router.post('/webhook/set/:instance', requireApiKey, (req: Request<{ instance: string }>, res) => {
    const { instance } = req.params;
    const parsed = setWebhookBody.safeParse(req.body);
    if (!parsed.success) {
      res.status(400).json(badRequest(parsed.error.issues.map((issue) => issue.message)));
      return;
    }
    const { enabled, url, events, webhookByEvents } = parsed.data.webhook;
    if (enabled && events.length === 0) {
      res.status(400).json(badRequest(['Events is required']));
      return;
    }
    if (enabled) webhooks.set(instance, { url, events, byEvents: webhookByEvents });
    else webhooks.delete(instance);
    res.status(201).json({ webhook: { instanceName: instance, webhook: { url, events, enabled } } });
  });

  function inboundDelivery(message: InboundMessage): InboundDelivery | undefined {
    if (message.type !== 'text') {
      throw new ControlError(400, `${CHANNEL} inbound supports type "text" only`);
    }
    const registration = webhooks.get(message.account);
    if (!registration) return undefined;
    // Evolution only calls a webhook for the events it was subscribed to.
    if (!registration.events.includes(UPSERT_EVENT)) {
      throw new ControlError(
        409,
        `${CHANNEL} account ${message.account} webhook is not subscribed to ${UPSERT_EVENT}`,
      );
    }
    const now = new Date();
    const id = messageId();
    const apiKey = stores.credentials.get(CHANNEL, message.account);
    const payload = {
      event: 'messages.upsert',
      instance: message.account,
      data: {
        key: { remoteJid: jid(message.from), fromMe: false, id },
        pushName: message.name ?? '',
        message: { conversation: message.text },
        messageType: 'conversation',
        messageTimestamp: unixSeconds(now),
      },
      date_time: now.toISOString(),
      sender: jid(message.from),
      ...(apiKey === undefined ? {} : { apikey: apiKey }),
    };
    return {
      url: registration.byEvents
        ? `${registration.url.replace(/\/+$/, '')}/${UPSERT_EVENT_PATH}`
        : registration.url,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(payload),
      providerMessageId: id,
    };
  }

  return { channel: CHANNEL, router, inboundDelivery, reset: () => webhooks.clear() };
}

function unauthorized() {
  return { status: 401, error: 'Unauthorized', response: { message: 'Unauthorized' } };
}

function badRequest(messages: string[]) {
  return { status: 400, error: 'Bad Request', response: { message: messages } };
}

function providerError(status: number) {
  return {
    status,
    error: STATUS_CODES[status] ?? 'Internal Server Error',
    response: { message: ['sandbox fault'] },
  };
}

function jid(digits: string): string {
  return `${digits}@s.whatsapp.net`;
}

/** Same look as the ids Evolution's WhatsApp client mints (upper-case hex with a fixed prefix). */
function messageId(): string {
  return `BAE5${upperHexId(8)}`;
}
