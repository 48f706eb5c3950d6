import { describe, expect, it } from 'vitest';
import { nestsDeeperThan } from './json-depth.js';

const nested = (levels: number): unknown => JSON.parse(`${'['.repeat(levels)}${']'.repeat(levels)}`);

describe('nestsDeeperThan', () => {
  it('counts the value itself as the first level, objects and arrays alike', () => {
    expect(nestsDeeperThan(nested(3), 3)).toBe(false);
    expect(nestsDeeperThan(nested(4), 3)).toBe(true);
    expect(nestsDeeperThan({ a: { b: [1] } }, 3)).toBe(false);
    expect(nestsDeeperThan({ a: { b: [[]] } }, 3)).toBe(true);
    expect(nestsDeeperThan({ a: 1, b: 'x', c: null }, 1)).toBe(false);
  });

  it('takes scalars and empty bodies as no level at all', () => {
    for (const value of [null, undefined, 1, 'text', true]) expect(nestsDeeperThan(value, 0)).toBe(false);
  });

  it('finds the deep branch among shallow ones', () => {
    expect(nestsDeeperThan({ wide: Array.from({ length: 1_000 }, () => ({})), deep: nested(40) }, 32)).toBe(
      true,
    );
  });

  it('walks a body nested a million levels without overflowing the stack', () => {
    expect(nestsDeeperThan(nested(1_000_000), 32)).toBe(true);
  });
});
