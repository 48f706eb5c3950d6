import { createHmac, timingSafeEqual } from 'node:crypto';

export type RawBody = string | Buffer | Uint8Array;

function sameBytes(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  // The length check comes first: timingSafeEqual needs equal lengths, and a length says nothing secret.
  return left.length === right.length && timingSafeEqual(left, right);
}

function bytes(body: RawBody): Buffer {
  return typeof body === 'string' ? Buffer.from(body, 'utf8') : Buffer.from(body);
}

/**
 * Checks `X-Webhook-Signature` (`sha256=<hex HMAC-SHA256 of the raw body>`). Pass the body exactly as
 * received, before any JSON parsing: a re-serialised body does not match byte for byte.
 */
export function verifySignature(
  rawBody: RawBody,
  signatureHeader: string | undefined | null,
  secret: string,
): boolean {
  if (!signatureHeader) return false;
  const expected = `sha256=${createHmac('sha256', secret).update(bytes(rawBody)).digest('hex')}`;
  return sameBytes(signatureHeader.trim(), expected);
}

export interface StandardWebhookHeaders {
  'webhook-id'?: string | string[];
  'webhook-timestamp'?: string | string[];
  'webhook-signature'?: string | string[];
}

export type VerificationResult = { ok: true; id: string; timestamp: number } | { ok: false; reason: string };

const first = (value: string | string[] | undefined) => (Array.isArray(value) ? value[0] : value);

/**
 * Checks the Standard Webhooks headers: `webhook-signature` (`v1,<base64 HMAC-SHA256 of
 * "id.timestamp.body">`, space-separated when several) and a `webhook-timestamp` within the tolerance
 * (5 minutes by default), so a captured request cannot be replayed later. The key is the secret's
 * UTF-8 bytes, as the platform signs. Keep the ids you have seen to refuse repeats within the window.
 */
export function verifyStandardWebhook(
  headers: StandardWebhookHeaders,
  rawBody: RawBody,
  secret: string,
  { toleranceSeconds = 300, now = new Date() }: { toleranceSeconds?: number; now?: Date } = {},
): VerificationResult {
  const id = first(headers['webhook-id']);
  const timestampText = first(headers['webhook-timestamp']);
  const signatures = first(headers['webhook-signature']);
  if (!id || !timestampText || !signatures)
    return { ok: false, reason: 'missing webhook-id, webhook-timestamp or webhook-signature' };
  if (!/^\d+$/.test(timestampText))
    return { ok: false, reason: 'webhook-timestamp is not a Unix time in seconds' };
  const timestamp = Number(timestampText);
  if (Math.abs(now.getTime() / 1000 - timestamp) > toleranceSeconds) {
    return { ok: false, reason: 'webhook-timestamp is outside the tolerance' };
  }
  const signed = Buffer.concat([Buffer.from(`${id}.${timestampText}.`), bytes(rawBody)]);
  const expected = createHmac('sha256', secret).update(signed).digest('base64');
  const matches = signatures
    .split(' ')
    .filter((entry) => entry.startsWith('v1,'))
    .some((entry) => sameBytes(entry.slice(3), expected));
  return matches ? { ok: true, id, timestamp } : { ok: false, reason: 'no webhook-signature matches' };
}
