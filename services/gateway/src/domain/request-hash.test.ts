import { describe, expect, it } from 'vitest';
import { requestHash } from './request-hash.js';

describe('requestHash', () => {
  it('ignores key order but not values or the endpoint', () => {
    const a = requestHash('POST /x', { b: 1, a: { d: [1, 2], c: 'x' } });
    expect(requestHash('POST /x', { a: { c: 'x', d: [1, 2] }, b: 1 })).toBe(a);
    expect(requestHash('POST /x', { a: { c: 'x', d: [2, 1] }, b: 1 })).not.toBe(a);
    expect(requestHash('POST /y', { b: 1, a: { d: [1, 2], c: 'x' } })).not.toBe(a);
  });
});
