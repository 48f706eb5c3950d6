import { describe, expect, it } from 'vitest';
import { nextDeliveryStatus } from './delivery-status.js';

describe('nextDeliveryStatus', () => {
  it.each([
    [null, 'sent', 'sent'],
    ['sent', 'delivered', 'delivered'],
    ['read', 'delivered', 'read'],
    ['delivered', 'read', 'read'],
    ['read', 'failed', 'failed'],
    ['failed', 'read', 'failed'],
  ] as const)('%s then %s is %s', (current, reported, next) => {
    expect(nextDeliveryStatus(current, reported)).toBe(next);
  });
});
