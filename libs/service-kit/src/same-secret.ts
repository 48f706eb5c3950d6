import { createHash, timingSafeEqual } from 'node:crypto';

const digest = (secret: string) => createHash('sha256').update(secret).digest();

/**
 * Compares a presented secret with the expected one in time that depends on neither their content nor
 * their length: both are hashed to 32 bytes first, since `timingSafeEqual` takes equal lengths only and a
 * length check of its own would tell the length. An absent secret is never the expected one.
 */
export function sameSecret(presented: string | undefined, expected: string): boolean {
  if (presented === undefined) return false;
  return timingSafeEqual(digest(presented), digest(expected));
}
