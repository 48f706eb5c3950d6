import { getEventListeners } from 'node:events';
import { createServer } from 'node:http';
import { describe, expect, it } from 'vitest';
import { Deadline } from '../src/deadline.js';
import { Agent, request } from '../src/undici-parts.js';

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

  it('ends a call at the deadline even while undici keeps it queued for a connection', async () => {
    // One connection, held by a request its server never answers: the next one queues behind it.
    const held: Array<() => void> = [];
    const server = createServer((_req, res) => held.push(() => res.end('late')));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/`;
    const agent = new Agent({ connections: 1 });
    try {
      const first = request(url, { method: 'GET', dispatcher: agent }).catch(() => undefined);
      const deadline = new Deadline(50);
      const queued = deadline.race(
        request(url, { method: 'GET', dispatcher: agent, signal: deadline.signal }),
      );
      // Settled with the deadline's reason while the connection it waits for is still held.
      await expect(queued).rejects.toMatchObject({ name: 'TimeoutError' });
      expect(held).toHaveLength(1);
      deadline.clear();
      for (const answer of held) answer();
      await first;
      // Aborted, never sent, once it got the connection.
      await later(50);
      expect(held).toHaveLength(1);
    } finally {
      await agent.close();
      server.close();
    }
  });

  it('races nothing once aborted, and lets go of the signal once the work settles', async () => {
    const done = new Deadline(1_000);
    await expect(done.race(Promise.resolve('answer'))).resolves.toBe('answer');
    expect(getEventListeners(done.signal, 'abort')).toHaveLength(0);
    done.clear();

    const outer = new AbortController();
    outer.abort(new Error('the caller gave up'));
    const late = new Deadline(1_000, outer.signal);
    await expect(late.race(new Promise(() => undefined))).rejects.toThrow('the caller gave up');
    late.clear();
  });
});
