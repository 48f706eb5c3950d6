import { timingSafeEqual } from 'node:crypto';
import type { RawBody } from './raw-body.js';
import { listOf, type Secrets } from './secrets.js';
import { signBody, standardDigests } from './sign.js';

function sameBytes(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  // The length check comes first: timingSafeEqual needs equal lengths, and a length says nothing secret.
  return left.length === right.length && timingSafeEqual(left, right);
}

/**
 * Checks `X-Webhook-Signature` (`sha256=<hex HMAC-SHA256 of the raw body>`) against one secret or
 * several (any may match). Pass the body exactly as received, before any JSON parsing: a re-serialised
 * body does not match byte for byte.
 */
export function verifySignature(
  rawBody: RawBody,
  signatureHeader: string | undefined | null,
  secret: Secrets,
): boolean {
  if (!signatureHeader) return false;
  const received = signatureHeader.trim();
  return listOf(secret).some((key) => sameBytes(received, signBody(rawBody, key)));
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
 * (5 minutes by default), so a captured request cannot be replayed later. Takes one secret or
 * several (any may match), each as the platform gave it or in the `whsec_<base64>` form. Keep the ids
 * you have seen to refuse repeats within the window.
 */
export function verifyStandardWebhook(
  headers: StandardWebhookHeaders,
  rawBody: RawBody,
  secret: Secrets,
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
  const received = signatures
    .split(' ')
    .filter((entry) => entry.startsWith('v1,'))
    .map((entry) => entry.slice(3));
  const matches = standardDigests(id, timestampText, rawBody, secret).some((expected) =>
    received.some((entry) => sameBytes(entry, expected)),
  );
  return matches ? { ok: true, id, timestamp } : { ok: false, reason: 'no webhook-signature matches' };
}
