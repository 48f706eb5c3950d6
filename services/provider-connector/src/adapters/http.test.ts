import { describe, expect, it } from 'vitest';
import { statusOutcome } from './http.js';

describe("a provider answer's status as a metric outcome", () => {
  it('keeps the statuses HTTP registers and folds the rest, which a tenant-named provider may answer', () => {
    expect(statusOutcome(429)).toBe('http_429');
    expect(statusOutcome(503)).toBe('http_503');
    const answers = new Set(Array.from({ length: 900 }, (_, i) => statusOutcome(100 + i)));
    expect(answers.size).toBeLessThan(80);
    expect(statusOutcome(799)).toBe('http_other');
  });
});
