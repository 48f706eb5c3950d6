import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { Deadline } from '../src/deadline.js';

const later = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('Deadline', () => {
  it('aborts with a TimeoutError once its time has run out', async () => {
    const deadline = new Deadline(10);
    expect(deadline.signal.aborted).toBe(false);
    await later(30);
    expect(deadline.signal.aborted).toBe(true);
    expect((deadline.signal.reason as DOMException).name).toBe('TimeoutError');
  });

  it('never aborts once cleared, and lets go of the outer signal', async () => {
    const outer = new AbortController();
    const deadline = new Deadline(10, outer.signal);
    expect(getEventListeners(outer.signal, 'abort')).toHaveLength(1);
    deadline.clear();
    expect(getEventListeners(outer.signal, 'abort')).toHaveLength(0);
    await later(30);
    outer.abort(new Error('the caller gave up'));
    expect(deadline.signal.aborted).toBe(false);
  });

  it("follows the outer signal with the outer's reason", () => {
    const outer = new AbortController();
    const deadline = new Deadline(1_000, outer.signal);
    const reason = new Error('the caller gave up');
    outer.abort(reason);
    expect(deadline.signal.aborted).toBe(true);
    expect(deadline.signal.reason).toBe(reason);
    deadline.clear();

    const early = new Deadline(1_000, outer.signal);
    expect(early.signal.reason).toBe(reason);
    early.clear();
  });
});
