import { describe, expect, it } from 'vitest';
import { SecretBox } from './secret-box.js';

describe('SecretBox', () => {
  const box = new SecretBox(SecretBox.generateKey());

  it('opens what it sealed, in the same context only', () => {
    const sealed = box.seal('s3cret', 'integrations:w1:i1');
    expect(sealed).toMatch(/^v1\./);
    expect(sealed).not.toContain('s3cret');
    expect(box.open(sealed, 'integrations:w1:i1')).toBe('s3cret');
    expect(() => box.open(sealed, 'integrations:w2:i1')).toThrow();
  });

  it('refuses tampered, truncated-tag and foreign-key values', () => {
    const sealed = box.seal('s3cret', 'c');
    const [v, iv, tag, ct] = sealed.split('.') as [string, string, string, string];
    const shortTag = Buffer.from(tag, 'base64url').subarray(0, 4).toString('base64url');
    expect(() => box.open([v, iv, shortTag, ct].join('.'), 'c')).toThrow(/malformed/);
    const flipped = Buffer.from(ct, 'base64url');
    flipped[0] = (flipped[0] ?? 0) ^ 1;
    expect(() => box.open([v, iv, tag, flipped.toString('base64url')].join('.'), 'c')).toThrow();
    expect(() => new SecretBox(SecretBox.generateKey()).open(sealed, 'c')).toThrow();
    expect(() => new SecretBox('c2hvcnQ=')).toThrow(/32 bytes/);
  });

  it('digests a secret the same way under one key and context, and tells nothing of it otherwise', () => {
    const digest = box.digest('app-secret', 'provider-app');
    expect(box.digest('app-secret', 'provider-app')).toBe(digest);
    expect(digest).not.toContain('app-secret');
    expect(box.digest('another-secret', 'provider-app')).not.toBe(digest);
    expect(box.digest('app-secret', 'another-context')).not.toBe(digest);
    expect(new SecretBox(SecretBox.generateKey()).digest('app-secret', 'provider-app')).not.toBe(digest);
  });
});
