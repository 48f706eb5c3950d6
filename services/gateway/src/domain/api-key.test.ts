import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  apiKeyCacheKey,
  bearerToken,
  generateApiKey,
  hashApiKey,
  keyHint,
  looksLikeApiKey,
} from './api-key.js';

describe('api keys', () => {
  it('are sk_live_ followed by 40 base62 characters, different every time', () => {
    const keys = new Set(Array.from({ length: 100 }, generateApiKey));
    expect(keys.size).toBe(100);
    for (const key of keys) expect(key).toMatch(/^sk_live_[0-9A-Za-z]{40}$/);
  });

  it('are stored as SHA-256 and hinted without revealing the secret part', () => {
    const key = generateApiKey();
    expect(hashApiKey(key)).toHaveLength(32);
    expect(hashApiKey(key).equals(createHash('sha256').update(key).digest())).toBe(true);
    // The key cache is indexed by the digest the database stores, so a miss can look it up.
    expect(apiKeyCacheKey(key)).toBe(hashApiKey(key).toString('base64'));
    expect(keyHint(key)).toMatch(/^sk_live_.{4}….{4}$/);
  });

  it('recognise the format and read bearer headers', () => {
    expect(looksLikeApiKey(generateApiKey())).toBe(true);
    expect(looksLikeApiKey('sk_live_short')).toBe(false);
    expect(looksLikeApiKey('sk_test_0123456789012345678901234567890123')).toBe(false);
    expect(bearerToken('Bearer abc')).toBe('abc');
    expect(bearerToken('bearer abc')).toBe('abc');
    expect(bearerToken('Basic abc')).toBeUndefined();
    expect(bearerToken(undefined)).toBeUndefined();
  });
});
