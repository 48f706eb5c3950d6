import { createHmac } from 'node:crypto';
import { bytes, type RawBody } from './raw-body.js';
import { listOf, type Secrets, standardWebhookKeyTexts } from './secrets.js';

/**
 * `X-Webhook-Signature`, as the spec's Events section prescribes: `sha256=<hex HMAC-SHA256 of the raw
 * body>`, keyed with the secret's UTF-8 bytes whatever its form.
 */
export function signBody(body: RawBody, secret: string): string {
  return `sha256=${createHmac('sha256', secret).update(bytes(body)).digest('hex')}`;
}

/**
 * The base64 HMAC-SHA256 of `id.timestamp.body` under every Standard Webhooks key of every secret. The
 * keys go in as text with their encoding: on Node 24 an HMAC keyed with a Buffer costs 14-18 µs against
 * 2 µs for the same bytes as text (bench/RESULTS.md, eleventh session), and every delivery signs twice.
 */
export function standardDigests(id: string, timestamp: string, body: RawBody, secrets: Secrets): string[] {
  const content = Buffer.concat([Buffer.from(`${id}.${timestamp}.`, 'utf8'), bytes(body)]);
  return listOf(secrets)
    .flatMap(standardWebhookKeyTexts)
    .map(({ text, encoding }) => createHmac('sha256', text, { encoding }).update(content).digest('base64'));
}

/** `webhook-signature`: `v1,<base64>` per key, space-separated, as Standard Webhooks allows several. */
export function standardSignature(id: string, timestamp: string, body: RawBody, secrets: Secrets): string {
  return standardDigests(id, timestamp, body, secrets)
    .map((digest) => `v1,${digest}`)
    .join(' ');
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
 * Every header the spec lists (with the legacy twins), plus X-Webhook-Id for receivers to de-duplicate
 * and, with a secret, the Standard Webhooks trio so receivers can also refuse replays. During a
 * rotation's grace period `webhook-signature` carries the new and the previous secret's signatures;
 * the spec's single-valued header carries the new one.
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
    headers['webhook-signature'] = standardSignature(eventId, timestamp, body, [
      secret,
      ...(previousSecret ? [previousSecret] : []),
    ]);
  }
  return headers;
}
