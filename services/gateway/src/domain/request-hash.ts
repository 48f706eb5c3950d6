import { createHash } from 'node:crypto';

function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((key) => [key, canonical((value as Record<string, unknown>)[key])]),
    );
  }
  return value;
}

/** What makes two requests "the same" for an Idempotency-Key: endpoint and body, key order aside. */
export function requestHash(endpoint: string, body: unknown): string {
  return createHash('sha256')
    .update(`${endpoint}\n${JSON.stringify(canonical(body) ?? null)}`)
    .digest('hex');
}
