import { describe, expect, it } from 'vitest';
import { WaiterSlots } from './waiter-slots.js';

describe('WaiterSlots', () => {
  it('bounds waiters per workspace and frees a slot on leave', () => {
    const slots = new WaiterSlots(2, 10);
    expect(slots.tryEnter('w1')).toBe(true);
    expect(slots.tryEnter('w1')).toBe(true);
    expect(slots.tryEnter('w1')).toBe(false);
    expect(slots.tryEnter('w2')).toBe(true);
    slots.leave('w1');
    expect(slots.tryEnter('w1')).toBe(true);
  });

  it('bounds waiters in all, whatever the workspace', () => {
    const slots = new WaiterSlots(5, 3);
    for (const ws of ['w1', 'w2', 'w3']) expect(slots.tryEnter(ws)).toBe(true);
    expect(slots.tryEnter('w4')).toBe(false);
    slots.leave('w2');
    expect(slots.tryEnter('w4')).toBe(true);
  });
});
