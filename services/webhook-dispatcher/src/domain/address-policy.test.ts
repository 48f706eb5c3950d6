import { describe, expect, it } from 'vitest';
import { AddressPolicy } from './address-policy.js';

describe('AddressPolicy', () => {
  const strict = new AddressPolicy();
  it.each([
    '127.0.0.1',
    '10.1.2.3',
    '172.16.0.1',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '0.0.0.0',
    '::1',
    'fc00::1',
    'fe80::1',
    '::ffff:127.0.0.1',
    '::ffff:10.0.0.1',
    'not-an-ip',
  ])('refuses %s by default', (address) => {
    expect(strict.permits(address)).toBe(false);
  });

  it.each(['93.184.216.34', '8.8.8.8', '2606:4700:4700::1111'])('permits public %s', (address) => {
    expect(strict.permits(address)).toBe(true);
  });

  it('permits a private range only when it is allowed explicitly', () => {
    const local = AddressPolicy.fromSetting('127.0.0.0/8, 10.0.0.0/8');
    expect(local.permits('127.0.0.1')).toBe(true);
    expect(local.permits('::ffff:127.0.0.1')).toBe(true);
    expect(local.permits('10.9.9.9')).toBe(true);
    expect(local.permits('192.168.1.1')).toBe(false);
    expect(local.permits('169.254.169.254')).toBe(false);
  });

  it('refuses a setting that is not a CIDR list', () => {
    expect(() => AddressPolicy.fromSetting('localhost')).toThrow(/not a CIDR/);
  });
});
