import { describe, expect, it } from 'vitest';
import { errorCodeLabel } from './error-code-label.js';

describe('a provider error code as a metric label', () => {
  it("names Meta's documented codes, and folds any other a tenant's callback may carry into one", () => {
    expect(errorCodeLabel(131047)).toBe('131047');
    expect(errorCodeLabel(131053)).toBe('131053');
    expect(errorCodeLabel(null)).toBe('none');
    expect(errorCodeLabel(undefined)).toBe('none');
    const forged = new Set(Array.from({ length: 5_000 }, (_, i) => errorCodeLabel(900_000 + i)));
    expect([...forged]).toEqual(['other']);
  });
});
