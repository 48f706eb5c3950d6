/**
 * JSON as Meta writes its webhook bodies: every character beyond ASCII escaped as `\uXXXX` with lowercase
 * hex digits (UTF-16 code units, so an emoji is two escapes), and `/` as `\/`. Meta signs these bytes
 * ("an escaped unicode version of the payload, with lowercase hex digits ... äöå is escaped to
 * \u00e4\u00f6\u00e5"), so a receiver that verifies a re-serialised body instead of the raw one fails on
 * any accented name or text.
 */
export function metaJson(value: unknown): string {
  // Outside strings JSON has no character above 0x7f and no slash, so escaping the whole text is safe.
  return JSON.stringify(value)
    .replace(/[\u0080-\uffff]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`)
    .replaceAll('/', '\\/');
}
