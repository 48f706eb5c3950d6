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

/** One secret, or several while a rotation's grace period lasts (the new one and the one it replaced). */
export type Secrets = string | readonly string[];

const listOf = (secrets: Secrets): readonly string[] => (typeof secrets === 'string' ? [secrets] : secrets);

const whsecPrefix = 'whsec_';

/**
 * The HMAC keys a Standard Webhooks secret may stand for. The platform keys with the secret's UTF-8
 * bytes, whatever it looks like (its generated secrets start with `whsec_` too); the reference
 * libraries read `whsec_<base64>` as the base64-decoded bytes. Trying both keeps the platform's own
 * secrets working and accepts `whsec_` + base64(secret), the form those libraries are given.
 */
function standardKeys(secret: string): Buffer[] {
  const keys = [Buffer.from(secret, 'utf8')];
  const encoded = secret.startsWith(whsecPrefix) ? secret.slice(whsecPrefix.length) : '';
  if (/^[A-Za-z0-9+/_-]+={0,2}$/.test(encoded)) keys.push(Buffer.from(encoded, 'base64'));
  return keys;
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
  const body = bytes(rawBody);
  return listOf(secret).some((key) =>
    sameBytes(received, `sha256=${createHmac('sha256', key).update(body).digest('hex')}`),
  );
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
  const signed = Buffer.concat([Buffer.from(`${id}.${timestampText}.`), bytes(rawBody)]);
  const received = signatures
    .split(' ')
    .filter((entry) => entry.startsWith('v1,'))
    .map((entry) => entry.slice(3));
  const matches = listOf(secret)
    .flatMap(standardKeys)
    .some((key) => {
      const expected = createHmac('sha256', key).update(signed).digest('base64');
      return received.some((entry) => sameBytes(entry, expected));
    });
  return matches ? { ok: true, id, timestamp } : { ok: false, reason: 'no webhook-signature matches' };
}
