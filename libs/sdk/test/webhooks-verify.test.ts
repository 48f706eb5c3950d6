import { createHmac, randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { verifySignature, verifyStandardWebhook } from '../src/webhooks/index.js';

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

  it('accepts any of several secrets, as during a rotation', () => {
    expect(verifySignature(body, `sha256=${hex}`, ['new-secret', secret])).toBe(true);
    expect(verifySignature(body, `sha256=${hex}`, [secret, 'new-secret'])).toBe(true);
    expect(verifySignature(body, `sha256=${hex}`, ['new-secret', 'other'])).toBe(false);
    expect(verifySignature(body, `sha256=${hex}`, [])).toBe(false);
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

  it('accepts any of several secrets and any of several signatures', () => {
    const other = 'the-new-one';
    const both = `v1,${createHmac('sha256', other).update(`evt-1.${timestamp}.${body}`).digest('base64')} ${headers['webhook-signature']}`;
    expect(verifyStandardWebhook({ ...headers, 'webhook-signature': both }, body, other, { now }).ok).toBe(
      true,
    );
    expect(verifyStandardWebhook({ ...headers, 'webhook-signature': both }, body, secret, { now }).ok).toBe(
      true,
    );
    expect(verifyStandardWebhook(headers, body, [other, secret], { now }).ok).toBe(true);
    expect(verifyStandardWebhook(headers, body, [other, 'unrelated'], { now }).ok).toBe(false);
    expect(verifyStandardWebhook(headers, body, [], { now }).ok).toBe(false);
  });

  it('takes whsec_<base64> secrets as the reference libraries do, and the platform secret as given', () => {
    // The form a Standard Webhooks library is given for the platform's secret: whsec_ + base64(secret).
    const whsec = `whsec_${Buffer.from(secret).toString('base64')}`;
    expect(verifyStandardWebhook(headers, body, whsec, { now }).ok).toBe(true);
    // A random key, signed by the reference library itself.
    const reference = `whsec_${randomBytes(32).toString('base64')}`;
    const signed = new Webhook(reference).sign('evt-9', now, body);
    const referenceHeaders = {
      'webhook-id': 'evt-9',
      'webhook-timestamp': timestamp,
      'webhook-signature': signed,
    };
    expect(verifyStandardWebhook(referenceHeaders, body, reference, { now }).ok).toBe(true);
    expect(verifyStandardWebhook(referenceHeaders, body, ['other', reference], { now }).ok).toBe(true);
    expect(
      verifyStandardWebhook(referenceHeaders, body, `whsec_${randomBytes(32).toString('base64')}`, { now })
        .ok,
    ).toBe(false);
    // Secrets the platform generated before were whsec_ + base64url, which the reference libraries
    // cannot decode: they are raw secrets, keyed with their UTF-8 bytes as they always were.
    const generated = 'whsec_Zm9v-YmFy_YmF6LXF1eA';
    const platformSigned = `v1,${createHmac('sha256', generated).update(`evt-1.${timestamp}.${body}`).digest('base64')}`;
    expect(
      verifyStandardWebhook({ ...headers, 'webhook-signature': platformSigned }, body, generated, { now }).ok,
    ).toBe(true);
  });
});
