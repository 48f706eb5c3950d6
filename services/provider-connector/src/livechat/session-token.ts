import { createHash, randomBytes } from 'node:crypto';

/** A visitor's bearer token: 32 random bytes, base64url; only its digest is stored. */
export function newSessionToken(): { token: string; digest: Buffer } {
  const token = randomBytes(32).toString('base64url');
  return { token, digest: tokenDigest(token) };
}

/** The digest a token is looked up by; a lookup by digest compares nothing secret in our code. */
export function tokenDigest(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}

/** The token of an `Authorization: Bearer …` header, when it has the shape we issue. */
export function bearerToken(header: string | undefined): string | undefined {
  const match = /^Bearer ([A-Za-z0-9_-]{43})$/.exec(header ?? '');
  return match?.[1];
}
