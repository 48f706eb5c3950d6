import { describe, expect, it } from 'vitest';
import { normalisePhone, otherStoredForm } from './phone.js';

describe('normalisePhone', () => {
  it.each([
    ['+5511999990000', '55', '+5511999990000'],
    ['+55 (11) 99999-0000', '55', '+5511999990000'],
    ['11999990000', '55', '+5511999990000'],
    ['1199999000', '55', '+5511999999000'],
    ['1133334444', '55', '+551133334444'],
    ['+553188887777', '55', '+5531988887777'],
    ['553188887777', '1', '+5531988887777'],
    ['+5531988887777', '55', '+5531988887777'],
    ['+12025550123', '55', '+12025550123'],
    ['2025550123', '1', '+12025550123'],
    ['5511999990000', '55', '+5511999990000'],
    ['55.11.99999.0000', '1', '+5511999990000'],
    ['+52 1 55 1234 5678', '55', '+525512345678'],
    ['5215512345678', '55', '+525512345678'],
    ['+525512345678', '55', '+525512345678'],
    ['+5491123456789', '55', '+5491123456789'],
    ['+541123456789', '55', '+541123456789'],
    // No Mexican number starts with 1 after the mobile prefix: not that prefix, left as written.
    ['+5211234567890', '55', '+5211234567890'],
  ])('%s with country %s is %s', (raw, country, expected) => {
    expect(normalisePhone(raw, country)).toBe(expected);
  });

  it.each(['123', '+123456789', 'abc1234567890', '12345678901234567', ''])('refuses %s', (raw) => {
    expect(normalisePhone(raw, '55')).toBeUndefined();
  });
});

describe('otherStoredForm', () => {
  it.each([
    ['+5531988887777', '+553188887777'],
    ['+525512345678', '+5215512345678'],
    ['+5491123456789', '+541123456789'],
    ['+541123456789', '+5491123456789'],
    ['+5493514567890', '+543514567890'],
    ['+543514567890', '+5493514567890'],
  ])('%s may be stored as %s', (canonical, other) => {
    expect(otherStoredForm(canonical)).toBe(other);
  });

  // A Brazilian landline, a number of another country, an Argentine toll-free number.
  it.each(['+551133334444', '+12025550123', '+548001234567'])('%s has no other form', (canonical) => {
    expect(otherStoredForm(canonical)).toBeUndefined();
  });
});
