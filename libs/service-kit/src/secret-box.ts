import {
  createCipheriv,
  createDecipheriv,
  createHmac,
  createSecretKey,
  hkdfSync,
  type KeyObject,
  randomBytes,
} from 'node:crypto';

/**
 * Encrypts secrets at rest (provider credentials, webhook secrets) with AES-256-GCM. The stored form is
 * `v1.<iv>.<tag>.<ciphertext>` in base64url, so the format can change without guessing. Each secret is
 * bound to where it belongs (`context`, e.g. table, workspace and row id, as associated data), so a
 * sealed value copied to another row or workspace does not open there.
 */
export class SecretBox {
  // A KeyObject made once: on Node 24 a cipher keyed with a Buffer costs four times as much (24 against
  // 6 µs), its key going through the KeyObject and CryptoKey checks that throw and catch an error each.
  private readonly key: KeyObject;
  /** For digests, derived from the key: the encryption key itself is used for nothing else. */
  private readonly digestKey: KeyObject;

  constructor(keyBase64: string) {
    const bytes = Buffer.from(keyBase64, 'base64');
    if (bytes.length !== 32) throw new Error('the encryption key must be 32 bytes, base64-encoded');
    this.key = createSecretKey(bytes);
    this.digestKey = createSecretKey(Buffer.from(hkdfSync('sha256', bytes, '', 'secret-box digest v1', 32)));
  }

  /**
   * A keyed digest of a secret, for finding the rows that hold it without opening each: equal for equal
   * secrets and contexts under one key, and telling nothing of the secret without the key.
   */
  digest(secret: string, context: string): string {
    return createHmac('sha256', this.digestKey).update(`${context}\0${secret}`, 'utf8').digest('base64url');
  }

  static generateKey(): string {
    return randomBytes(32).toString('base64');
  }

  seal(plaintext: string, context: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv, { authTagLength: 16 });
    cipher.setAAD(Buffer.from(context, 'utf8'));
    const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return ['v1', iv, cipher.getAuthTag(), ciphertext]
      .map((part) => (typeof part === 'string' ? part : part.toString('base64url')))
      .join('.');
  }

  open(sealed: string, context: string): string {
    const [version, ivText, tagText, ciphertext] = sealed.split('.');
    if (version !== 'v1' || !ivText || !tagText || ciphertext === undefined) {
      throw new Error('unknown sealed secret format');
    }
    const iv = Buffer.from(ivText, 'base64url');
    const tag = Buffer.from(tagText, 'base64url');
    // A shortened tag would weaken the authentication GCM gives; only the full 16 bytes are accepted.
    if (iv.length !== 12 || tag.length !== 16) throw new Error('malformed sealed secret');
    const decipher = createDecipheriv('aes-256-gcm', this.key, iv, { authTagLength: 16 });
    decipher.setAAD(Buffer.from(context, 'utf8'));
    decipher.setAuthTag(tag);
    return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]).toString(
      'utf8',
    );
  }
}
