import { readAllowedOrigins } from '@inbox/contracts';
import { describe, expect, it } from 'vitest';
import { originAllowed } from './origins.js';
import { bearerToken, newSessionToken, tokenDigest } from './session-token.js';
import { lastSeenSeq, sseEvent } from './streams.js';

describe('live chat session tokens', () => {
  it('are 32 random bytes, kept as their SHA-256 only, and read back from a bearer header', () => {
    const { token, digest } = newSessionToken();
    expect(token).toMatch(/^[\w-]{43}$/);
    expect(digest).toEqual(tokenDigest(token));
    expect(digest.toString('hex')).not.toContain(Buffer.from(token).toString('hex'));
    expect(newSessionToken().token).not.toBe(token);
    expect(bearerToken(`Bearer ${token}`)).toBe(token);
    for (const header of [
      undefined,
      token,
      `Bearer ${token}x`,
      `bearer ${token}`,
      `Bearer ${token.slice(1)}!`,
    ]) {
      expect(bearerToken(header)).toBeUndefined();
    }
  });
});

describe('live chat origins', () => {
  it('take a list of exact origins, separated by commas or spaces', () => {
    expect(readAllowedOrigins('https://a.example, http://127.0.0.1:8081  https://b.example')).toEqual([
      'https://a.example',
      'http://127.0.0.1:8081',
      'https://b.example',
    ]);
    for (const bad of [
      '',
      ' , ',
      'https://a.example/',
      'https://a.example/path',
      'ftp://a.example',
      'a.example',
      'null',
    ])
      expect(readAllowedOrigins(bad)).toBeUndefined();
  });

  it('admit only a listed origin, compared exactly', () => {
    const listed = { allowed_origins: 'https://shop.example,http://localhost:3000' };
    expect(originAllowed(listed, 'https://shop.example')).toBe(true);
    expect(originAllowed(listed, 'http://localhost:3000')).toBe(true);
    for (const origin of [
      undefined,
      'null',
      'http://shop.example',
      'https://shop.example:443x',
      'https://SHOP.example.evil',
    ])
      expect(originAllowed(listed, origin)).toBe(false);
    expect(originAllowed({}, 'https://shop.example')).toBe(false);
  });
});

describe('live chat replay', () => {
  it('numbers each event by its seq, and a hostile text cannot forge another event', () => {
    const event = sseEvent({
      seq: '41',
      id: '7a1c2f8e-0000-4000-8000-000000000000',
      author: 'operator',
      text: 'hi\n\nid: 99\ndata: {"forged":true}',
      created_at: new Date('2025-01-02T03:04:05Z'),
    });
    expect(event.startsWith('id: 41\nevent: message\ndata: {')).toBe(true);
    expect(event.endsWith('\n\n')).toBe(true);
    expect(event.slice(0, -2)).not.toContain('\n\n');
    expect(event.match(/^id: /gm)).toHaveLength(1);
  });

  it('resumes after the Last-Event-ID a widget sends back, from the start when it is not ours', () => {
    expect(lastSeenSeq('41')).toBe(41n);
    for (const header of [undefined, '', '-1', '4e3', '1'.repeat(19), '12 ', 'abc'])
      expect(lastSeenSeq(header)).toBe(0n);
  });
});
