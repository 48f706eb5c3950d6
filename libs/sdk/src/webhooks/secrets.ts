import { randomBytes } from 'node:crypto';

/** One secret, or several while a rotation's grace period lasts (the new one and the one it replaced). */
export type Secrets = string | readonly string[];

export const listOf = (secrets: Secrets): readonly string[] =>
  typeof secrets === 'string' ? [secrets] : secrets;

const whsecPrefix = 'whsec_';
// What the reference libraries decode after the prefix: standard base64, padded. Anything else they refuse.
const standardBase64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** `whsec_` + base64 of 24 random bytes: the reference libraries' form, so they take it as it is. */
export function generateWebhookSecret(): string {
  return `${whsecPrefix}${randomBytes(24).toString('base64')}`;
}

/** An HMAC key as text and the encoding that turns it into the key's bytes. */
export interface KeyText {
  text: string;
  encoding: 'base64' | 'utf8';
}

/**
 * The HMAC keys a secret stands for in the Standard Webhooks signature. A `whsec_<base64>` secret
 * stands for its decoded bytes, as in the reference libraries, so a receiver using one of them is
 * given the secret exactly as the platform shows it. Such a secret's UTF-8 bytes are a key as well:
 * the platform keyed every secret that way before, and receivers set up then still do. Any other
 * secret is keyed with its UTF-8 bytes only, as it always was.
 */
export function standardWebhookKeyTexts(secret: string): KeyText[] {
  const utf8: KeyText = { text: secret, encoding: 'utf8' };
  const encoded = secret.startsWith(whsecPrefix) ? secret.slice(whsecPrefix.length) : '';
  return encoded && standardBase64.test(encoded) ? [{ text: encoded, encoding: 'base64' }, utf8] : [utf8];
}

/** `standardWebhookKeyTexts` as the keys' bytes. */
export function standardWebhookKeys(secret: string): Buffer[] {
  return standardWebhookKeyTexts(secret).map(({ text, encoding }) => Buffer.from(text, encoding));
}
