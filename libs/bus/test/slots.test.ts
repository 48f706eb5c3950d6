import { describe, expect, it } from 'vitest';
import { PendingCalls } from '../src/pending-calls.js';
import { Slots } from '../src/slots.js';

describe('Slots', () => {
  it('reuses released slots, so it grows only to the most held at once', () => {
    const slots = new Slots<{ n: number }>();
    for (let round = 0; round < 1_000; round++) {
      const held = [0, 1, 2].map((i) => slots.hold({ n: round * 3 + i }));
      for (const slot of held) slots.release(slot);
    }
    expect(slots.capacity).toBe(3);
    expect(slots.size).toBe(0);
    expect([...slots.values()]).toEqual([]);
  });

  it('gives what a slot holds until it is released, and lists what is held', () => {
    const slots = new Slots<string>();
    const a = slots.hold('a');
    const b = slots.hold('b');
    const c = slots.hold('c');
    slots.release(b);
    expect(slots.get(a)).toBe('a');
    expect(slots.get(b)).toBeUndefined();
    expect(slots.get(c)).toBe('c');
    expect(slots.get(99)).toBeUndefined();
    expect([...slots.values()]).toEqual(['a', 'c']);
    expect(slots.size).toBe(2);
  });

  it('ignores a second release, which would otherwise free a slot another value took', () => {
    const slots = new Slots<string>();
    const first = slots.hold('first');
    slots.release(first);
    const second = slots.hold('second');
    expect(second).toBe(first);
    slots.release(first);
    slots.release(first);
    expect(slots.size).toBe(0);
    // Released once only: the next value does not share a slot with a value still held.
    const third = slots.hold('third');
    const fourth = slots.hold('fourth');
    expect(third).not.toBe(fourth);
  });
});

describe('PendingCalls', () => {
  it('finds a call by the id its reply carries, and nothing once it is forgotten', () => {
    const calls = new PendingCalls<string>();
    const id = calls.add('call 1');
    expect(id).toMatch(/^\d+-\d+$/);
    expect(calls.get(id)).toBe('call 1');
    calls.delete(id);
    expect(calls.get(id)).toBeUndefined();
  });

  it('gives a late reply nothing even when a newer call holds the same slot', () => {
    const calls = new PendingCalls<string>();
    const late = calls.add('given up');
    calls.delete(late);
    const current = calls.add('current');
    expect(current.split('-')[0]).toBe(late.split('-')[0]);
    expect(calls.get(late)).toBeUndefined();
    // Forgetting the late id again must not drop the current call.
    calls.delete(late);
    expect(calls.get(current)).toBe('current');
    expect([...calls.values()]).toEqual(['current']);
  });

  it('finds nothing for ids no call was given', () => {
    const calls = new PendingCalls<string>();
    calls.add('call');
    for (const id of [
      '',
      '0',
      '01',
      '-1',
      '0-',
      '0-2',
      'x-1',
      '1-1',
      '0-1-1',
      ' 0-1',
      '00-1',
      '1-undefined',
      '0-undefined',
    ])
      expect(calls.get(id), id).toBeUndefined();
    expect(calls.get('0-1')).toBe('call');
  });
});
