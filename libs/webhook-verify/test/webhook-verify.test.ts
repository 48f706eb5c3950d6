import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { verifySignature, verifyStandardWebhook } from '../src/index.js';

const body = '{"event":"message.sent","text":"olá"}';
const secret = 's3cret';
const hex = createHmac('sha256', secret).update(body).digest('hex');

describe('verifySignature', () => {
  it('accepts the signature of the raw body and nothing else', () => {
    expect(verifySignature(body, `sha256=${hex}`, secret)).toBe(true);
    expect(verifySignature(Buffer.from(body), `sha256=${hex}`, secret)).toBe(true);
    expect(verifySignature(JSON.stringify(JSON.parse(body), null, 1), `sha256=${hex}`, secret)).toBe(false);
    expect(verifySignature(body, `sha256=${hex}`, 'other')).toBe(false);
    expect(verifySignature(body, `sha256=${hex.slice(1)}`, secret)).toBe(false);
    expect(verifySignature(body, undefined, secret)).toBe(false);
  });
});

describe('verifyStandardWebhook', () => {
  const now = new Date('2026-06-01T12:00:00Z');
  const timestamp = String(Math.floor(now.getTime() / 1000));
  const sign = (id: string, ts: string) =>
    `v1,${createHmac('sha256', secret).update(`${id}.${ts}.${body}`).digest('base64')}`;
  const headers = {
    'webhook-id': 'evt-1',
    'webhook-timestamp': timestamp,
    'webhook-signature': sign('evt-1', timestamp),
  };

  it('accepts a fresh, correctly signed request', () => {
    expect(verifyStandardWebhook(headers, body, secret, { now })).toEqual({
      ok: true,
      id: 'evt-1',
      timestamp: Number(timestamp),
    });
    expect(
      verifyStandardWebhook(
        { ...headers, 'webhook-signature': `v1,bogus ${headers['webhook-signature']}` },
        body,
        secret,
        { now },
      ).ok,
    ).toBe(true);
  });

  it('refuses replays outside the tolerance, tampering and missing headers', () => {
    const later = new Date(now.getTime() + 301_000);
    expect(verifyStandardWebhook(headers, body, secret, { now: later })).toMatchObject({
      ok: false,
      reason: /tolerance/,
    });
    expect(verifyStandardWebhook({ ...headers, 'webhook-id': 'evt-2' }, body, secret, { now }).ok).toBe(
      false,
    );
    expect(verifyStandardWebhook(headers, `${body} `, secret, { now }).ok).toBe(false);
    expect(
      verifyStandardWebhook({ ...headers, 'webhook-signature': undefined }, body, secret, { now }).ok,
    ).toBe(false);
    expect(
      verifyStandardWebhook({ ...headers, 'webhook-timestamp': 'yesterday' }, body, secret, { now }).ok,
    ).toBe(false);
  });
});
