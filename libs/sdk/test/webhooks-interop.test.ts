import { createHmac, randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import {
  deliveryHeaders,
  generateWebhookSecret,
  standardWebhookKeys,
  verifyStandardWebhook,
} from '../src/webhooks/index.js';

// Interoperability with the reference Standard Webhooks library, in both directions.
const body = '{"event":"message.sent","text":"olá"}';

function signedByUs(secret: string, previousSecret?: string) {
  return deliveryHeaders({
    eventId: 'evt-1',
    eventType: 'message.sent',
    body,
    secret,
    previousSecret,
    now: new Date(),
  });
}

function referenceAccepts(webhook: Webhook, headers: Record<string, string>): boolean {
  try {
    webhook.verify(body, headers);
    return true;
  } catch {
    return false;
  }
}

function signedByReference(webhook: Webhook) {
  const now = new Date();
  return {
    'webhook-id': 'evt-2',
    'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
    'webhook-signature': webhook.sign('evt-2', now, body),
  };
}

describe('whsec_ secrets', () => {
  const secret = generateWebhookSecret();

  it('are generated in the form the reference library takes as it is', () => {
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
    expect(() => new Webhook(secret)).not.toThrow();
  });

  it('sign deliveries the reference library verifies with the secret as given', () => {
    expect(referenceAccepts(new Webhook(secret), signedByUs(secret))).toBe(true);
    expect(referenceAccepts(new Webhook(generateWebhookSecret()), signedByUs(secret))).toBe(false);
  });

  it('verify what the reference library signed', () => {
    const headers = signedByReference(new Webhook(secret));
    expect(verifyStandardWebhook(headers, body, secret).ok).toBe(true);
    expect(verifyStandardWebhook(headers, body, generateWebhookSecret()).ok).toBe(false);
  });

  it('also sign with their UTF-8 bytes, the key receivers set up before this library were told to use', () => {
    const headers = signedByUs(secret);
    expect(headers['webhook-signature']!.split(' ')).toHaveLength(2);
    const legacy = new Webhook(`whsec_${Buffer.from(secret).toString('base64')}`);
    expect(referenceAccepts(legacy, headers)).toBe(true);
    const utf8 = createHmac('sha256', secret)
      .update(`evt-1.${headers['webhook-timestamp']}.${body}`)
      .digest('base64');
    expect(headers['webhook-signature']).toContain(`v1,${utf8}`);
  });

  it('that the reference library cannot decode are raw secrets', () => {
    for (const raw of ['whsec_test_secret', 'whsec_Zm9v-YmFy', 'whsec_YWJj=', 'whsec_'])
      expect(standardWebhookKeys(raw)).toEqual([Buffer.from(raw, 'utf8')]);
    expect(standardWebhookKeys('whsec_YWJj')).toEqual([Buffer.from('abc'), Buffer.from('whsec_YWJj')]);
  });
});

describe('raw secrets', () => {
  const secret = 'whsec_test_secret';
  const reference = new Webhook(secret, { format: 'raw' });

  it('keep signing with their UTF-8 bytes alone, which the reference library verifies as a raw key', () => {
    const headers = signedByUs(secret);
    expect(headers['webhook-signature']!.split(' ')).toHaveLength(1);
    expect(referenceAccepts(reference, headers)).toBe(true);
    expect(referenceAccepts(new Webhook(`whsec_${Buffer.from(secret).toString('base64')}`), headers)).toBe(
      true,
    );
  });

  it('verify what the reference library signed with them as a raw key', () => {
    const headers = signedByReference(reference);
    expect(verifyStandardWebhook(headers, body, secret).ok).toBe(true);
    expect(verifyStandardWebhook(headers, body, 'whsec_other_secret').ok).toBe(false);
  });
});

describe('a rotation from a raw secret to a whsec_ one', () => {
  it('signs so that the reference library verifies with either while the grace period lasts', () => {
    const previous = `old-${randomBytes(8).toString('hex')}`;
    const next = generateWebhookSecret();
    const headers = signedByUs(next, previous);
    expect(headers['webhook-signature']!.split(' ')).toHaveLength(3);
    expect(referenceAccepts(new Webhook(next), headers)).toBe(true);
    expect(referenceAccepts(new Webhook(previous, { format: 'raw' }), headers)).toBe(true);
    expect(verifyStandardWebhook(headers, body, [next, previous]).ok).toBe(true);
    expect(verifyStandardWebhook(headers, body, previous).ok).toBe(true);
  });
});
