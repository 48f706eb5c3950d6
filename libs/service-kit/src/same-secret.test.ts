import { describe, expect, it } from 'vitest';
import { sameSecret } from './same-secret.js';

describe('sameSecret', () => {
  it('is true only for the same secret, whatever the lengths', () => {
    expect(sameSecret('a', 'a')).toBe(true);
    expect(sameSecret('s3cret-token', 's3cret-token')).toBe(true);
    expect(sameSecret('a', 'b')).toBe(false);
    expect(sameSecret('s3cret', 's3cret-token')).toBe(false);
    expect(sameSecret('', 'x')).toBe(false);
  });

  it('refuses an absent secret', () => {
    expect(sameSecret(undefined, '')).toBe(false);
    expect(sameSecret(undefined, 'x')).toBe(false);
  });
});
