import { describe, expect, it } from 'vitest';
import { AddressPolicy, isCidrList } from './address-policy.js';

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
    '::',
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

  // Each of these reaches the IPv4 address it embeds, so it is judged as that address.
  it.each([
    ['::7f00:1', 'IPv4-compatible 127.0.0.1'],
    ['::127.0.0.1', 'IPv4-compatible, dotted'],
    ['::a9fe:a9fe', 'IPv4-compatible 169.254.169.254'],
    ['::ffff:0:7f00:1', 'IPv4-translated 127.0.0.1'],
    ['64:ff9b::7f00:1', 'NAT64 127.0.0.1'],
    ['64:ff9b::10.0.0.1', 'NAT64 10.0.0.1'],
    ['2002:7f00:1::', '6to4 127.0.0.1'],
    ['2002:a9fe:a9fe::1', '6to4 169.254.169.254'],
  ])('refuses %s (%s)', (address) => {
    expect(strict.permits(address)).toBe(false);
  });

  it.each(['::808:808', '64:ff9b::8.8.8.8', '2002:808:808::1'])(
    'permits %s, which embeds a public IPv4 address',
    (address) => {
      expect(strict.permits(address)).toBe(true);
    },
  );

  it('permits an embedded IPv4 address only when its range is allowed', () => {
    const loopback = AddressPolicy.fromSetting('127.0.0.0/8');
    expect(loopback.permits('::7f00:1')).toBe(true);
    expect(loopback.permits('64:ff9b::7f00:1')).toBe(true);
    expect(loopback.permits('::a00:1')).toBe(false);
    // IPv6's own loopback is not 127.0.0.0/8.
    expect(loopback.permits('::1')).toBe(false);
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
    expect(isCidrList('localhost')).toBe(false);
    expect(isCidrList('127.0.0.0/8, ::1/128')).toBe(true);
    expect(isCidrList('')).toBe(true);
  });
});
