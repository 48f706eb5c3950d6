import { createHmac } from 'node:crypto';

/** `sha256=<hex HMAC-SHA256>` of the raw body, as the spec's Events section prescribes. */
export function signBody(body: string, secret: string): string {
  return `sha256=${createHmac('sha256', secret).update(body, 'utf8').digest('hex')}`;
}

export interface DeliveryHeaderInput {
  eventId: string;
  eventType: string;
  body: string;
  secret: string | null;
  /** The secret a rotation replaced, while its grace period lasts. */
  previousSecret?: string | null;
  now: Date;
}

/**
 * The Standard Webhooks signature (`v1,<base64 HMAC-SHA256 of "id.timestamp.body">`). The key is the
 * secret's UTF-8 bytes; receivers using a Standard Webhooks library pass `whsec_` + base64(secret).
 */
export function standardSignature(eventId: string, timestamp: string, body: string, secret: string): string {
  return `v1,${createHmac('sha256', secret).update(`${eventId}.${timestamp}.${body}`, 'utf8').digest('base64')}`;
}

/**
 * Every header the spec lists (with the legacy twins), plus X-Webhook-Id for receivers to de-duplicate
 * and, with a secret, the Standard Webhooks trio so receivers can also refuse replays. During a
 * rotation's grace period `webhook-signature` carries the new and the previous secret's signatures
 * (Standard Webhooks allows several, space-separated); the spec's single-valued header carries the new one.
 */
export function deliveryHeaders({
  eventId,
  eventType,
  body,
  secret,
  previousSecret,
  now,
}: DeliveryHeaderInput): Record<string, string> {
  const timestamp = String(Math.floor(now.getTime() / 1000));
  const headers: Record<string, string> = {
    'Content-Type': 'application/json',
    'User-Agent': 'Webhooks/1.0',
    'X-Webhook-Event': eventType,
    'X-Webhook-Timestamp': timestamp,
    'X-Webhook-Id': eventId,
    'X-Legacy-Event': eventType,
    'X-Legacy-Timestamp': timestamp,
  };
  if (secret) {
    const signature = signBody(body, secret);
    headers['X-Webhook-Signature'] = signature;
    headers['X-Legacy-Signature'] = signature;
    headers['webhook-id'] = eventId;
    headers['webhook-timestamp'] = timestamp;
    headers['webhook-signature'] = [secret, ...(previousSecret ? [previousSecret] : [])]
      .map((key) => standardSignature(eventId, timestamp, body, key))
      .join(' ');
  }
  return headers;
}
