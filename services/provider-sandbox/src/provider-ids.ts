import { randomBytes } from 'node:crypto';

/** Upper-case hex, the look of Z-API's ids (32 characters) and of Evolution's (after its prefix). */
export function upperHexId(bytes: number): string {
  return randomBytes(bytes).toString('hex').toUpperCase();
}

export function unixSeconds(at: Date): number {
  return Math.floor(at.getTime() / 1000);
}
