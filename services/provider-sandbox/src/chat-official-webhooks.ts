import { createHmac, randomInt } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { Request, Response } from 'express';
import { z } from 'zod';
import type { DeliveryStatus, WebhookDelivery } from './channel-emulator.js';
import type { ChatOfficialState } from './chat-official-state.js';
import { GraphCode, GraphError, invalidParameter } from './graph-error.js';
import { unixSeconds } from './provider-ids.js';
import { WEBHOOK_TIMEOUT_MS } from './webhook-transport.js';

const overrideBody = z.object(
  {
    webhook_configuration: z.object(
      {
        override_callback_uri: z.url({
          protocol: /^https?$/,
          error: 'webhook_configuration.override_callback_uri must be an http(s) URL',
        }),
        verify_token: z
          .string({ error: 'webhook_configuration.verify_token is required' })
          .min(1, 'webhook_configuration.verify_token must not be empty'),
      },
      { error: 'webhook_configuration is required' },
    ),
  },
  { error: 'body must be a JSON object' },
);

/**
 * `POST /:version/:phoneNumberId` with `webhook_configuration`: Meta only keeps a callback that passed
 * its verification handshake, so a connector that cannot answer `hub.challenge` is never registered.
 */
export function overrideCallback(state: ChatOfficialState, fetchImpl: typeof fetch) {
  return async (req: Request<{ phoneNumberId: string }>, res: Response): Promise<void> => {
    const parsed = overrideBody.safeParse(req.body);
    if (!parsed.success) {
      throw invalidParameter(parsed.error.issues.map((issue) => issue.message).join('; '));
    }
    const { override_callback_uri: url, verify_token: verifyToken } = parsed.data.webhook_configuration;
    const problem = await verifyCallback(fetchImpl, url, verifyToken);
    if (problem !== undefined) {
      const message = `Callback verification failed with the following errors: ${problem}`;
      throw new GraphError(400, GraphCode.callbackVerificationFailed, message, problem);
    }
    state.overrides.set(req.params.phoneNumberId, { url, verifyToken });
    res.json({ success: true });
  };
}

/** Meta's handshake; undefined when the callback echoed the challenge, else what went wrong. */
async function verifyCallback(
  fetchImpl: typeof fetch,
  callback: string,
  verifyToken: string,
): Promise<string | undefined> {
  const challenge = String(randomInt(100_000_000, 2_000_000_000));
  const url = new URL(callback);
  url.searchParams.set('hub.mode', 'subscribe');
  url.searchParams.set('hub.verify_token', verifyToken);
  url.searchParams.set('hub.challenge', challenge);
  let status: number;
  let answer: string;
  try {
    const response = await fetchImpl(url, { signal: AbortSignal.timeout(WEBHOOK_TIMEOUT_MS) });
    status = response.status;
    answer = await response.text();
  } catch (error) {
    return `Could not reach the callback: ${error instanceof Error ? error.message : String(error)}`;
  }
  const httpStatus = `HTTP Status Code = ${status}; HTTP Message = ${STATUS_CODES[status] ?? 'Unknown'}`;
  if (status !== 200) return httpStatus;
  if (answer !== challenge) return `${httpStatus}; The response body did not match the challenge`;
  return undefined;
}

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
}

/** The Cloud API notification for a customer's text message. */
export function inboundNotification(notifier: Notifier, message: InboundText, at: Date): WebhookDelivery {
  return signedNotification(notifier, {
    contacts: [{ profile: { name: message.name ?? '' }, wa_id: message.from }],
    messages: [
      {
        from: message.from,
        id: message.wamid,
        timestamp: String(unixSeconds(at)),
        type: 'text',
        text: { body: message.text },
      },
    ],
  });
}

export interface StatusChange {
  wamid: string;
  status: DeliveryStatus;
  recipient: string;
}

/** The Cloud API notification for a change of an outbound message's status. */
export function statusNotification(notifier: Notifier, change: StatusChange, at: Date): WebhookDelivery {
  return signedNotification(notifier, {
    statuses: [
      {
        id: change.wamid,
        status: change.status,
        timestamp: String(unixSeconds(at)),
        recipient_id: change.recipient,
        ...(change.status === 'failed' ? { errors: [{ code: 131026, title: 'Message undeliverable' }] } : {}),
      },
    ],
  });
}

/** Wraps a `messages` change in the notification envelope and signs the exact bytes that will be sent. */
function signedNotification(notifier: Notifier, value: Record<string, unknown>): WebhookDelivery {
  const body = JSON.stringify({
    object: 'whatsapp_business_account',
    entry: [
      {
        id: notifier.wabaId,
        changes: [
          {
            field: 'messages',
            value: {
              messaging_product: 'whatsapp',
              metadata: { display_phone_number: notifier.account, phone_number_id: notifier.account },
              ...value,
            },
          },
        ],
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
