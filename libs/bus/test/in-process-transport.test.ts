import { randomUUID } from 'node:crypto';
import type { WireEvent } from '@inbox/contracts';
import { waitFor } from '@inbox/testkit';
import { expect, it } from 'vitest';
import { InProcessBus } from '../src/index.js';
import { busContract } from './bus-contract.js';

// In one process every "replica" is the same bus object: handlers and consumers registered twice share
// the work exactly as two NATS connections in one queue group or durable do.
busContract('in-process', async (replicas) => {
  const bus = new InProcessBus();
  return Array.from({ length: replicas }, () => bus);
});

it('keeps the newest events for a durable that starts later, and the newest dead letters, no more', async () => {
  const bus = new InProcessBus({ keep: 3 });
  const event = (n: number): WireEvent => ({
    id: randomUUID(),
    type: 'message.sent',
    workspace_id: randomUUID(),
    occurred_at: new Date().toISOString(),
    data: { n },
  });
  for (let n = 1; n <= 5; n++) await bus.publish(event(n));
  const seen: number[] = [];
  await bus.consume({ durable: 'late', filter: '>', maxDeliver: 1 }, async (e) => {
    seen.push((e.data as { n: number }).n);
    throw new Error('refused');
  });
  await waitFor(async () => (await bus.deadLetters('late')).length === 3, { what: 'three dead letters' });
  expect(seen).toEqual([3, 4, 5]);
  await bus.publish(event(6));
  await waitFor(() => seen.includes(6), { what: 'the sixth event' });
  await waitFor(
    async () =>
      (await bus.deadLetters('late'))
        .map((letter) => (letter.event as WireEvent).data as { n: number })
        .at(-1)?.n === 6,
    { what: 'its dead letter' },
  );
  expect((await bus.deadLetters('late')).map((letter) => (letter.event as WireEvent).data)).toEqual([
    { n: 4 },
    { n: 5 },
    { n: 6 },
  ]);
  await bus.drain();
});
