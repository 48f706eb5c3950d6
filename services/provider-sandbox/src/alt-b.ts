import { type NextFunction, type Request, type Response, Router } from 'express';
import { z } from 'zod';
import type { ChannelEmulator, InboundDelivery, InboundMessage, SandboxStores } from './channel-emulator.js';
import { ControlError } from './control-error.js';
import { answerFault } from './faults.js';
import { jsonBody } from './json-body.js';
import { upperHexId } from './provider-ids.js';

/** Emulates Z-API, the provider behind the `alt-b` channel. */
const CHANNEL = 'alt-b';

/**
 * Z-API binds two secrets to an instance: the token in the path and the account-wide `Client-Token`
 * header. The credential book keeps one secret per channel and account, so the path token lives under
 * its own name.
 */
const INSTANCE_TOKEN_BOOK = `${CHANNEL}/instance-token`;

/** Z-API answers every credential problem with the same text, whichever secret was wrong. */
const NOT_ALLOWED = { error: 'Client-Token not allowed' };

const INSTANCE_PATH = '/instances/:instanceId/token/:token';

type InstanceParams = { instanceId: string; token: string };

const sendTextBody = z.object(
  {
    phone: z
      .string({
        error: (issue) => (issue.input === undefined ? 'phone is required' : 'phone must be a string'),
      })
      .regex(/^\d+$/, 'phone must contain digits only'),
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

export function createAltB(stores: SandboxStores): ChannelEmulator {
  const webhooks = new Map<string, string>();
  const router = Router();
  router.use(jsonBody);

  // Credentials come before anything else, as with the real API: a bad body from a stranger is still a 401.
  function requireTokens(req: Request<InstanceParams>, res: Response, next: NextFunction): void {
    const { instanceId, token } = req.params;
    const clientToken = req.get('client-token');
    const allowed =
      clientToken !== undefined &&
      clientToken !== '' &&
      stores.credentials.accept(CHANNEL, instanceId, clientToken) &&
      stores.credentials.accept(INSTANCE_TOKEN_BOOK, instanceId, token);
    if (!allowed) {
      res.status(401).json(NOT_ALLOWED);
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
    const messageId = zapiId();
    stores.sent.record({
      channel: CHANNEL,
      account: instanceId,
      to: parsed.data.phone,
      method: req.method,
      path: `${req.baseUrl}${req.path}`,
      body: req.body,
      provider_message_id: messageId,
      received_at: new Date().toISOString(),
    });
    res.json({ zaapId: zapiId(), messageId, id: messageId });
  });

  router.put(
    `${INSTANCE_PATH}/update-webhook-received`,
    requireTokens,
    (req: Request<InstanceParams>, res) => {
      const parsed = updateWebhookBody.safeParse(req.body);
      if (!parsed.success) {
        res.status(400).json({ error: parsed.error.issues.map((issue) => issue.message).join('; ') });
        return;
      }
      webhooks.set(req.params.instanceId, parsed.data.value);
      res.json({ value: true });
    },
  );

  function inboundDelivery(message: InboundMessage): InboundDelivery | undefined {
    if (message.type !== 'text') {
      throw new ControlError(400, `${CHANNEL} inbound supports type "text" only`);
    }
    const url = webhooks.get(message.account);
    if (!url) return undefined;
    const messageId = zapiId();
    const payload = {
      isStatusReply: false,
      instanceId: message.account,
      messageId,
      phone: message.from,
      fromMe: false,
      momment: Date.now(),
      status: 'RECEIVED',
      chatName: message.name ?? message.from,
      senderName: message.name ?? '',
      type: 'ReceivedCallback',
      text: { message: message.text },
    };
    // Z-API signs nothing; the connector recognises its webhooks by the account's Client-Token.
    const clientToken = stores.credentials.get(CHANNEL, message.account);
    return {
      url,
      headers: {
        'Content-Type': 'application/json',
        ...(clientToken === undefined ? {} : { 'Client-Token': clientToken }),
      },
      body: JSON.stringify(payload),
      providerMessageId: messageId,
    };
  }

  return { channel: CHANNEL, router, inboundDelivery, reset: () => webhooks.clear() };
}

/** Z-API's ids are 32 upper-case hex characters. */
function zapiId(): string {
  return upperHexId(16);
}
