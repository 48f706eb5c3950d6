import { hash, randomInt } from 'node:crypto';

const alphabet = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
export const apiKeyPrefix = 'sk_live_';
const randomLength = 40;

/** A new key: the fixed prefix and 40 base62 characters from the CSPRNG (about 238 bits). */
export function generateApiKey(): string {
  let random = '';
  for (let i = 0; i < randomLength; i++) random += alphabet[randomInt(alphabet.length)];
  return apiKeyPrefix + random;
}

// One-shot `hash`: a sixth of a Hash object's cost, and every request to the public API pays it.
export function hashApiKey(key: string): Buffer {
  return hash('sha256', key, 'buffer');
}

/** The key's digest as the key cache's index. */
export function apiKeyCacheKey(key: string): string {
  return hash('sha256', key, 'base64');
}

/** Enough of the key for an operator to recognise it, never enough to use it. */
export function keyHint(key: string): string {
  return `${key.slice(0, apiKeyPrefix.length + 4)}…${key.slice(-4)}`;
}

export function looksLikeApiKey(candidate: string): boolean {
  return (
    candidate.startsWith(apiKeyPrefix) && /^[0-9A-Za-z]{32,}$/.test(candidate.slice(apiKeyPrefix.length))
  );
}

/** The token of an `Authorization: Bearer <token>` header, or undefined. */
export function bearerToken(header: string | undefined): string | undefined {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
  return match?.[1];
}
