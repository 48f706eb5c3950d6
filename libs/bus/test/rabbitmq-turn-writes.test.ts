import { Socket } from 'node:net';
import { connect } from 'amqplib';
import { describe, expect, inject, it, onTestFinished } from 'vitest';
import { coalesceTurnWrites } from '../src/rabbitmq-turn-writes.js';

type Connected = Awaited<ReturnType<typeof connect>>;

const rabbitUrl = () => inject('infra').rabbitmqUrl;

/**
 * Sends `count` messages, each from a callback of its own run in the same turn of the event loop (as the
 * callbacks of one socket read are), and counts the writes that reach this connection's socket.
 */
async function writesForOneTurn(model: Connected, queue: string, count: number): Promise<number> {
  const channel = await model.createChannel();
  const own = (model.connection as unknown as { stream: Socket }).stream;
  let writes = 0;
  const proto = Socket.prototype as unknown as Record<'_write' | '_writev', (...args: unknown[]) => void>;
  const original = { _write: proto._write, _writev: proto._writev };
  for (const method of ['_write', '_writev'] as const)
    proto[method] = function (this: Socket, ...args: unknown[]) {
      if (this === own) writes++;
      return original[method].apply(this, args);
    };
  try {
    await new Promise<void>((resolve) => {
      for (let i = 0; i < count; i++)
        setImmediate(() => {
          channel.sendToQueue(queue, Buffer.from(String(i)));
          // amqplib writes at the next setImmediate: two more turns and its pass is over.
          if (i === count - 1) setImmediate(() => setImmediate(resolve));
        });
    });
  } finally {
    Object.assign(proto, original);
  }
  await channel.close();
  return writes;
}

describe('amqplib writes coalesced per turn', () => {
  it('sends what the callbacks of one turn publish in one write, every message in order', async () => {
    const listener = await connect(rabbitUrl());
    const coalescing = await connect(rabbitUrl());
    const stock = await connect(rabbitUrl());
    onTestFinished(async () => {
      await Promise.all([listener.close(), coalescing.close(), stock.close()]);
    });
    expect(coalesceTurnWrites(coalescing.connection)).toBe(true);
    const channel = await listener.createChannel();
    const { queue } = await channel.assertQueue('', { exclusive: true });
    const received: string[] = [];
    await channel.consume(queue, (message) => message && received.push(message.content.toString()), {
      noAck: true,
    });

    // The stock Mux writes once per message: the count shows what the test would see unbatched.
    expect(await writesForOneTurn(stock, queue, 10)).toBe(10);
    expect(await writesForOneTurn(coalescing, queue, 10)).toBe(1);

    await expect.poll(() => received.length).toBe(20);
    const numbers = Array.from({ length: 10 }, (_, i) => String(i));
    expect(received).toEqual([...numbers, ...numbers]);
  });

  it('leaves a connection without the parts it relies on as it is', () => {
    expect(coalesceTurnWrites({})).toBe(false);
    expect(coalesceTurnWrites({ muxer: { out: {} } })).toBe(false);
    expect(coalesceTurnWrites(undefined)).toBe(false);
  });
});
