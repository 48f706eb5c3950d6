import { providerUserIdMaxChars } from '@inbox/contracts';
import { maxEventBytes } from '@inbox/db';
import { describe, expect, it } from 'vitest';
import { boundMessage, boundStatus, inboundBounds } from './inbound-bounds.js';

describe('inbound bounds', () => {
  it('keep the worst message a provider can send (every character escaped in JSON) under the event bound', () => {
    const escaped = '\u0001'.repeat(1_000_000);
    const { message, truncated } = boundMessage({
      providerMessageId: escaped,
      from: '9'.repeat(1_000),
      name: escaped,
      text: escaped,
      type: 'text',
      sentAt: new Date(Number.NaN),
    });
    expect(truncated.map((cut) => cut.field).sort()).toEqual(['name', 'text']);
    expect(message.text).toHaveLength(inboundBounds.textChars);
    expect(Number.isNaN(message.sentAt.getTime())).toBe(false);
    expect(Buffer.byteLength(JSON.stringify(message))).toBeLessThan(maxEventBytes / 2);
  });

  it("keep a number's user id beside it when the contracts take it, and drop a longer one, never the message", () => {
    const message = (userId: string) =>
      boundMessage({
        providerMessageId: 'w',
        from: '5511944440001',
        userId,
        name: null,
        text: 'oi',
        type: 'text',
        sentAt: new Date(),
      }).message;
    expect(message('BR.1502576394655843')).toMatchObject({
      from: '5511944440001',
      userId: 'BR.1502576394655843',
    });
    const long = message(`BR.${'1'.repeat(providerUserIdMaxChars)}`);
    expect(long).toMatchObject({ from: '5511944440001', text: 'oi' });
    expect(long).not.toHaveProperty('userId');
  });

  it('never split a character, and make NUL storable', () => {
    const text = `${'a'.repeat(inboundBounds.textChars - 1)}😀`;
    expect(
      boundMessage({
        providerMessageId: 'p\u0000',
        from: '1',
        name: null,
        text,
        type: 'text',
        sentAt: new Date(),
      }),
    ).toMatchObject({
      message: { providerMessageId: 'p\uFFFD', text: 'a'.repeat(inboundBounds.textChars - 1) },
    });
    expect(
      boundStatus({ providerMessageId: 'x', status: 'failed', error: `e\u0000${'r'.repeat(5_000)}` }).error,
    ).toHaveLength(inboundBounds.statusErrorChars);
  });

  it("keep a status's error code only when a column holds it, and its time only when it has passed", () => {
    const at = new Date(Date.now() - 60_000);
    expect(
      boundStatus({ providerMessageId: 'x', status: 'failed', error: 'e', errorCode: 131047, at }),
    ).toMatchObject({ errorCode: 131047, at });
    const odd = boundStatus({
      providerMessageId: 'x',
      status: 'failed',
      error: 'e',
      errorCode: 2 ** 40,
      at: new Date(Date.now() + 86_400_000),
    });
    expect(odd.errorCode).toBeNull();
    expect(odd.at!.getTime()).toBeLessThanOrEqual(Date.now());
    expect(boundStatus({ providerMessageId: 'x', status: 'read', error: null }).errorCode).toBeNull();
  });

  it('keep only times an event can carry, as ISO date-times with a four-digit year', () => {
    const message = (sentAt: Date) =>
      boundMessage({ providerMessageId: 'p', from: '1', name: null, text: 't', type: 'text', sentAt })
        .message;
    const sent = new Date('2026-11-29T10:00:00.000Z');
    expect(message(sent).sentAt).toEqual(sent);
    for (const odd of [new Date(1e15), new Date(-1e14), new Date(-62198755200000)]) {
      const bounded = message(odd).sentAt;
      expect(Math.abs(bounded.getTime() - Date.now())).toBeLessThan(60_000);
      expect(
        boundStatus({ providerMessageId: 'x', status: 'read', error: null, at: odd }).at!.toISOString(),
      ).toMatch(/^\d{4}-/);
    }
  });

  it('give long provider ids a stable digest, so two of them never collide', () => {
    const a = boundMessage({
      providerMessageId: `${'i'.repeat(300)}a`,
      from: '1',
      name: null,
      text: '',
      type: 'text',
      sentAt: new Date(),
    });
    const b = boundMessage({
      providerMessageId: `${'i'.repeat(300)}b`,
      from: '1',
      name: null,
      text: '',
      type: 'text',
      sentAt: new Date(),
    });
    expect(a.message.providerMessageId).not.toBe(b.message.providerMessageId);
    expect(a.message.providerMessageId).toMatch(/^sha256:/);
  });
});
