import { randomBytes } from 'node:crypto';

/** Upper-case hex, the look of Z-API's ids (32 characters) and of Evolution's (after its prefix). */
export function upperHexId(bytes: number): string {
  return randomBytes(bytes).toString('hex').toUpperCase();
}

export function unixSeconds(at: Date): number {
  return Math.floor(at.getTime() / 1000);
}

/** `count` random decimal digits (fake phone numbers, WhatsApp LIDs). */
export function randomDigits(count: number): string {
  return Array.from(randomBytes(count), (byte) => String(byte % 10)).join('');
}

/**
 * Evolution API's `date_time`: the server's local wall-clock time written as if it were UTC (its
 * `sendDataWebhook` subtracts the timezone offset, then calls `toISOString`, so the `Z` is wrong off UTC).
 */
export function evolutionLocalIsoTime(at: Date): string {
  return new Date(at.getTime() - at.getTimezoneOffset() * 60_000).toISOString();
}
