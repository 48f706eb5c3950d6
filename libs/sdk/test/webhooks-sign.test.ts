import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { deliveryHeaders, signBody, standardSignature } from '../src/webhooks/index.js';

describe('webhook signature', () => {
  it('is sha256= and the hex HMAC of the raw body keyed with the secret', () => {
    const body = '{"event":"message.sent","n":1}';
    const expected = createHmac('sha256', 's3cret').update(body).digest('hex');
    expect(signBody(body, 's3cret')).toBe(`sha256=${expected}`);
  });

  it('sends every spec header and its legacy twin; no signature without a secret', () => {
    const now = new Date('2026-01-02T03:04:05.678Z');
    const input = { eventId: 'e1', eventType: 'message.sent', body: '{}', now };
    const signed = deliveryHeaders({ ...input, secret: 'k' });
    expect(signed).toEqual({
      'Content-Type': 'application/json',
      'User-Agent': 'Webhooks/1.0',
      'X-Webhook-Event': 'message.sent',
      'X-Webhook-Timestamp': '1767323045',
      'X-Webhook-Id': 'e1',
      'X-Webhook-Signature': signBody('{}', 'k'),
      'X-Legacy-Event': 'message.sent',
      'X-Legacy-Timestamp': '1767323045',
      'X-Legacy-Signature': signBody('{}', 'k'),
      'webhook-id': 'e1',
      'webhook-timestamp': '1767323045',
      'webhook-signature': `v1,${createHmac('sha256', 'k').update('e1.1767323045.{}').digest('base64')}`,
    });
    const unsigned = deliveryHeaders({ ...input, secret: null });
    expect(unsigned).not.toHaveProperty('X-Webhook-Signature');
    expect(unsigned).not.toHaveProperty('X-Legacy-Signature');
    expect(unsigned).not.toHaveProperty('webhook-signature');
  });

  it('signs the Standard Webhooks header with the new and the previous secret; the spec header with the new one', () => {
    const now = new Date('2026-01-02T03:04:05.678Z');
    const headers = deliveryHeaders({
      eventId: 'e1',
      eventType: 'message.sent',
      body: '{}',
      secret: 'new',
      previousSecret: 'old',
      now,
    });
    const sign = (key: string) => standardSignature('e1', '1767323045', '{}', key);
    expect(headers['webhook-signature']).toBe(`${sign('new')} ${sign('old')}`);
    expect(headers['X-Webhook-Signature']).toBe(signBody('{}', 'new'));
    expect(headers['X-Legacy-Signature']).toBe(signBody('{}', 'new'));
  });
});
