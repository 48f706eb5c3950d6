import { createHash, timingSafeEqual } from 'node:crypto';

/** Compares secrets in time that depends on neither their content nor their length. */
export function sameSecret(a: string | undefined, b: string): boolean {
  if (a === undefined) return false;
  return timingSafeEqual(createHash('sha256').update(a).digest(), createHash('sha256').update(b).digest());
}
