import { describe, expect, it } from 'vitest';
import { clientAddress, clientNetwork } from './client-address.js';

describe('clientAddress', () => {
  it('keeps IPv4 addresses and unwraps IPv4-mapped IPv6 ones', () => {
    expect(clientAddress('203.0.113.9')).toBe('203.0.113.9');
    expect(clientAddress('::ffff:203.0.113.9')).toBe('203.0.113.9');
  });

  it('counts an IPv6 address under its /64, however it is written', () => {
    const expected = '2001:db8:0:1::/64';
    expect(clientAddress('2001:db8:0:1::1')).toBe(expected);
    expect(clientAddress('2001:0db8:0000:0001:ffff:ffff:ffff:ffff')).toBe(expected);
    expect(clientAddress('2001:db8::1:0:0:0:5')).toBe(expected);
    expect(clientAddress('::1')).toBe('0:0:0:0::/64');
    expect(clientAddress('2001:db8:0:2::1')).not.toBe(expected);
  });

  it('has one key for a request without an address', () => {
    expect(clientAddress(undefined)).toBe('unknown');
  });
});

describe('clientNetwork', () => {
  it('counts an IPv4 address under its /24 and an IPv6 /64 under its /48', () => {
    expect(clientNetwork(clientAddress('203.0.113.9'))).toBe('203.0.113.0/24');
    expect(clientNetwork(clientAddress('::ffff:203.0.113.200'))).toBe('203.0.113.0/24');
    expect(clientNetwork(clientAddress('2001:db8:7:1::1'))).toBe('2001:db8:7::/48');
    expect(clientNetwork(clientAddress('2001:db8:7:ffff::1'))).toBe('2001:db8:7::/48');
    expect(clientNetwork(clientAddress('2001:db8:8:1::1'))).not.toBe('2001:db8:7::/48');
    expect(clientNetwork(clientAddress(undefined))).toBe('unknown');
  });
});
