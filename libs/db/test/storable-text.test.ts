import { describe, expect, it } from 'vitest';
import { isStorableText, storableText, storableUtf8 } from '../src/storable-text.js';

describe('storable text', () => {
  it('replaces NUL and lone surrogates, keeps everything else', () => {
    expect(storableText('200 ok\u0000')).toBe('200 ok\uFFFD');
    expect(storableText('a\uD800b')).toBe('a\uFFFDb');
    expect(storableText('olá 👋')).toBe('olá 👋');
    expect(isStorableText('ok\u0000')).toBe(false);
    expect(isStorableText('a\uDC00')).toBe(false);
    expect(isStorableText('olá 👋')).toBe(true);
  });

  it('cuts to a length without splitting a character', () => {
    expect(storableText('abc', 2)).toBe('ab');
    expect(storableText('a👋', 2)).toBe('a');
  });

  it('decodes bytes with invalid UTF-8 replaced, bounded', () => {
    expect(storableUtf8(Buffer.from([0x6f, 0x6b, 0x00, 0xff, 0xfe]))).toBe('ok\uFFFD\uFFFD\uFFFD');
    expect(storableUtf8(Buffer.from('abcdef'), 3)).toBe('abc');
    expect(storableUtf8(Buffer.from('olá'), 3)).toBe('ol\uFFFD');
  });
});
