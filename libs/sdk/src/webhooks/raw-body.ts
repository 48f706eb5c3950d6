/** A webhook's body exactly as sent or received: signatures cover these bytes, not a re-serialisation. */
export type RawBody = string | Buffer | Uint8Array;

export function bytes(body: RawBody): Buffer {
  return typeof body === 'string' ? Buffer.from(body, 'utf8') : Buffer.from(body);
}
