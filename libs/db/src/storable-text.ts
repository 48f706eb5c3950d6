/**
 * Bytes and text from outside (receivers' answers, providers' callbacks, API callers) made safe for a
 * Postgres `text` or `jsonb` value before they are written. Postgres refuses NUL in both (and `\u0000`
 * inside jsonb strings), so one stray byte would fail the whole statement, and with it every other
 * row of a batch. NUL becomes U+FFFD, as do lone surrogates and (for bytes) invalid UTF-8 sequences.
 */
export function storableText(value: string, maxChars?: number): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: NUL is exactly what must go.
  const safe = value.toWellFormed().replace(/\u0000/g, '\uFFFD');
  return maxChars !== undefined && safe.length > maxChars ? cutAt(safe, maxChars) : safe;
}

/** The first `maxBytes` bytes of a body, decoded as UTF-8 (invalid sequences replaced), storable. */
export function storableUtf8(bytes: Uint8Array, maxBytes?: number): string {
  const slice = maxBytes !== undefined && bytes.length > maxBytes ? bytes.subarray(0, maxBytes) : bytes;
  // A sequence cut at the end becomes one U+FFFD, which says the answer went on.
  return storableText(new TextDecoder('utf-8', { fatal: false }).decode(slice));
}

/** True when `value` would be stored unchanged: no NUL, no lone surrogate. */
export function isStorableText(value: string): boolean {
  return !value.includes('\u0000') && value.isWellFormed();
}

// Never splits a surrogate pair: the cut would leave half a character.
function cutAt(value: string, maxChars: number): string {
  const end = /[\uD800-\uDBFF]/.test(value.charAt(maxChars - 1)) ? maxChars - 1 : maxChars;
  return value.slice(0, end);
}
