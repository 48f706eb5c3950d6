import { randomBytes, randomFillSync } from 'node:crypto';

// Random bytes drawn 4 KiB at a time: a `randomBytes` call per id cost the sandbox 2 µs in a loop and
// 5 % of its CPU under the send bench, a sixteenth of which a slice of this buffer costs.
const pool = Buffer.alloc(4096);
let poolOffset = pool.length;

/** Upper-case hex, the look of Z-API's ids (32 characters) and of Evolution's (after its prefix). */
export function upperHexId(bytes: number): string {
  if (bytes > pool.length) return randomBytes(bytes).toString('hex').toUpperCase();
  if (poolOffset + bytes > pool.length) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  const id = pool.toString('hex', poolOffset, poolOffset + bytes).toUpperCase();
  poolOffset += bytes;
  return id;
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
