import { describe, expect, it } from 'vitest';
import { allowedCidrs, DispatcherConfig } from './config.js';

const required = {
  DATABASE_URL: 'postgres://inbox:secret@postgres:5432/inbox',
  BUS_URL: 'nats://nats:4222',
  ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64'),
};

describe('DispatcherConfig allow-list', () => {
  it('reads OUTBOUND_ALLOWED_CIDRS, and WEBHOOK_ALLOWED_CIDRS only when that is empty', () => {
    const parse = (env: Record<string, string>) =>
      allowedCidrs(DispatcherConfig.parse({ ...required, ...env }));
    expect(parse({})).toBe('');
    expect(parse({ OUTBOUND_ALLOWED_CIDRS: '10.0.0.0/8' })).toBe('10.0.0.0/8');
    expect(parse({ OUTBOUND_ALLOWED_CIDRS: '', WEBHOOK_ALLOWED_CIDRS: '127.0.0.0/8' })).toBe('127.0.0.0/8');
    expect(parse({ OUTBOUND_ALLOWED_CIDRS: '10.0.0.0/8', WEBHOOK_ALLOWED_CIDRS: '127.0.0.0/8' })).toBe(
      '10.0.0.0/8',
    );
  });

  it('refuses a value that is not a CIDR list at start-up', () => {
    const parsed = DispatcherConfig.safeParse({ ...required, OUTBOUND_ALLOWED_CIDRS: 'localhost' });
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues[0]?.path).toEqual(['OUTBOUND_ALLOWED_CIDRS']);
  });
});

describe('DispatcherConfig secret grace period', () => {
  it('keeps a rotated-out secret 24 hours by default, takes 0 to turn the overlap off, refuses negatives', () => {
    const parse = (env: Record<string, string>) => DispatcherConfig.safeParse({ ...required, ...env });
    expect(parse({}).data?.WEBHOOK_SECRET_GRACE_HOURS).toBe(24);
    expect(parse({ WEBHOOK_SECRET_GRACE_HOURS: '0' }).data?.WEBHOOK_SECRET_GRACE_HOURS).toBe(0);
    expect(parse({ WEBHOOK_SECRET_GRACE_HOURS: '-1' }).success).toBe(false);
  });
});
