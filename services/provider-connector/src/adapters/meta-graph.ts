import { createHmac, timingSafeEqual } from 'node:crypto';
import { sameSecret } from '@inbox/service-kit';
import { z } from 'zod';
import { headerValue } from './http.js';

// What Meta's products reached through the Graph API share, whatever the product: the error object,
// the signed webhooks and the subscription handshake (developers.facebook.com/docs/graph-api/webhooks,
// .../graph-api/guides/error-handling).

/** Graph's error object: `{ error: { message, type, code, error_subcode?, error_data?, fbtrace_id } }`. */
export const GraphErrorBody = z.object({
  error: z.object({
    code: z.number(),
    error_subcode: z.number().optional(),
    message: z.string().optional(),
    error_data: z.object({ details: z.string().optional() }).optional(),
  }),
});
export type GraphErrorBody = z.infer<typeof GraphErrorBody>['error'];

/** Graph's throttling codes, the same for every product: app (4), user (17), page (32), API (613). */
export const graphThrottleCodes: ReadonlySet<number> = new Set([4, 17, 32, 613]);
/** The access token no longer works (expired, revoked, its user logged out). */
export const GRAPH_TOKEN_INVALID = 190;

/**
 * `appsecret_proof`: HMAC-SHA256 of the access token, keyed with the app secret
 * (developers.facebook.com/docs/graph-api/securing-requests). An app with "Require App Secret" on refuses
 * server calls without it, and Graph checks it whenever a call carries one ("Invalid appsecret_proof
 * provided in the API argument", code 100), which tells a wrong app secret at the first call.
 */
export const appSecretProof = (appSecret: string, accessToken: string): string =>
  createHmac('sha256', appSecret).update(accessToken).digest('hex');

/** Graph's refusal of the app secret behind a call: a wrong proof, or none where one is required. */
export const refusesAppSecret = (code: number, message: string | undefined): boolean =>
  code === 100 && /appsecret_proof/i.test(message ?? '');

/** The header Meta signs every webhook POST with. */
export const HUB_SIGNATURE_HEADER = 'x-hub-signature-256';

/**
 * `X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the raw body, keyed with the app secret>`, compared in
 * constant time. Verified over the raw bytes: Meta signs the body as it sends it, with non-ASCII
 * characters escaped (`\u00e1`), so a re-serialised body would not match.
 */
export function hubSignatureMatches(
  appSecret: string,
  rawBody: Buffer,
  headers: Record<string, string | string[] | undefined>,
): boolean {
  const expected = Buffer.from(`sha256=${createHmac('sha256', appSecret).update(rawBody).digest('hex')}`);
  const given = Buffer.from(headerValue(headers, HUB_SIGNATURE_HEADER) ?? '');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/**
 * The verification request Meta makes when a callback URL is saved: `hub.mode=subscribe`, the verify
 * token we chose (compared in constant time) and a challenge to echo back; undefined refuses it.
 */
export function hubChallengeAnswer(verifyToken: string, query: Record<string, unknown>): string | undefined {
  const challenge = query['hub.challenge'];
  const token = query['hub.verify_token'];
  if (query['hub.mode'] !== 'subscribe' || typeof challenge !== 'string' || typeof token !== 'string')
    return undefined;
  return sameSecret(token, verifyToken) ? challenge : undefined;
}
