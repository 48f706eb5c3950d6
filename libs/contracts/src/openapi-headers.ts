/** The headers the gateway reads and writes, and those a webhook delivery carries, as the document shows them. */

// The spec's limit, and the gateway's default (RATE_LIMIT_PER_MINUTE); an operator may set another.
export const documentedRateLimit = 60;

export const ref = (kind: 'headers' | 'parameters', name: string): { $ref: string } => ({
  $ref: `#/components/${kind}/${name}`,
});

const integerHeader = (description: string) => ({ description, schema: { type: 'integer' as const } });
export const responseHeaders = {
  'X-Request-Id': {
    description:
      "The id of this request in the platform's logs (yours, when you sent a valid `X-Request-Id`).",
    schema: { type: 'string' as const },
  },
  'RateLimit-Limit': integerHeader("Requests the workspace may make per minute (the spec's 60 by default)."),
  'RateLimit-Remaining': integerHeader('Requests left in the current minute.'),
  'RateLimit-Reset': integerHeader('Seconds until the budget is full again.'),
  'Retry-After': integerHeader('Seconds to wait before trying again.'),
  'Idempotent-Replayed': {
    description:
      'Present (`true`) when the answer is the recorded answer of an earlier request with the same Idempotency-Key.',
    schema: { type: 'string' as const, enum: ['true'] },
  },
};
export type HeaderName = keyof typeof responseHeaders;
export const rateLimitHeaders: HeaderName[] = ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset'];

export const idempotencyKey = {
  name: 'Idempotency-Key',
  in: 'header' as const,
  required: false,
  description:
    'Makes retries safe: the same key with the same body within 24 hours gets the first answer again (`Idempotent-Replayed: true`) and sends nothing twice; another body with the key gets 422, and a request made while the first is still under way waits for its answer (409 if it takes too long). 1 to 255 visible ASCII characters.',
  schema: { type: 'string' as const, pattern: '^[\\x21-\\x7E]{1,255}$' },
};

/**
 * Every header a webhook delivery carries: what `deliveryHeaders` of @inbox/sdk/webhooks sends (a test
 * holds the two together). Content-Type is the request body's media type.
 */
export function deliveryHeaderParameters(event: string) {
  const header = (
    name: string,
    required: boolean,
    description: string,
    schema: object,
    deprecated = false,
  ) => ({
    name,
    in: 'header' as const,
    required,
    description,
    schema,
    ...(deprecated ? { deprecated } : {}),
  });
  const timestamp = { type: 'string', pattern: '^[0-9]+$' };
  const signature = { type: 'string', pattern: '^sha256=[0-9a-f]{64}$' };
  const legacy = (name: string) =>
    `The legacy name of \`${name}\`, with the same value, for existing integrations.`;
  const signed = 'Only when the endpoint has a secret.';
  return [
    header('User-Agent', true, 'Always `Webhooks/1.0`.', { type: 'string', const: 'Webhooks/1.0' }),
    header('X-Webhook-Event', true, 'The event name.', { type: 'string', const: event }),
    header('X-Webhook-Timestamp', true, 'When the delivery was sent: Unix time in seconds.', timestamp),
    header(
      'X-Webhook-Id',
      true,
      "The event's id, the same on every retry of its delivery: keep the ids you have processed to ignore repeats.",
      { type: 'string', format: 'uuid' },
    ),
    header(
      'X-Webhook-Signature',
      false,
      `${signed} \`sha256=\` and the hex HMAC-SHA256 of the raw body, keyed with the secret (during a rotation's grace period, the new secret). Compute it over the body exactly as received, before parsing it, and compare in constant time.`,
      signature,
    ),
    header('X-Legacy-Event', true, legacy('X-Webhook-Event'), { type: 'string', const: event }, true),
    header('X-Legacy-Timestamp', true, legacy('X-Webhook-Timestamp'), timestamp, true),
    header('X-Legacy-Signature', false, `${signed} ${legacy('X-Webhook-Signature')}`, signature, true),
    header('webhook-id', false, `${signed} Standard Webhooks: the event's id, as \`X-Webhook-Id\`.`, {
      type: 'string',
      format: 'uuid',
    }),
    header('webhook-timestamp', false, `${signed} Standard Webhooks: as \`X-Webhook-Timestamp\`.`, timestamp),
    header(
      'webhook-signature',
      false,
      `${signed} Standard Webhooks: \`v1,\` and the base64 HMAC-SHA256 of \`<webhook-id>.<webhook-timestamp>.<body>\`; during a rotation's grace period one such value per secret, separated by spaces. Refuse timestamps far from now to refuse replays.`,
      { type: 'string', pattern: '^v1,[A-Za-z0-9+/]+={0,2}( v1,[A-Za-z0-9+/]+={0,2})*$' },
    ),
  ];
}
