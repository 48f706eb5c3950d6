import { describe, expect, it } from 'vitest';
import { normalisePhone } from './phone.js';

describe('normalisePhone', () => {
  it.each([
    ['+5511999990000', '55', '+5511999990000'],
    ['+55 (11) 99999-0000', '55', '+5511999990000'],
    ['11999990000', '55', '+5511999990000'],
    ['1199999000', '55', '+551199999000'],
    ['2025550123', '1', '+12025550123'],
    ['5511999990000', '55', '+5511999990000'],
    ['55.11.99999.0000', '1', '+5511999990000'],
  ])('%s with country %s is %s', (raw, country, expected) => {
    expect(normalisePhone(raw, country)).toBe(expected);
  });

  it.each(['123', '+123456789', 'abc1234567890', '12345678901234567', ''])('refuses %s', (raw) => {
    expect(normalisePhone(raw, '55')).toBeUndefined();
  });
});
