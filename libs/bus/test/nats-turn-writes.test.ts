import { Socket } from 'node:net';
import { uniquePrefix } from '@inbox/testkit';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { describe, expect, inject, it, onTestFinished } from 'vitest';
import { connectCoalescing } from '../src/nats-turn-writes.js';

const natsUrl = () => inject('infra').natsUrl;

/**
 * Publishes `count` messages, each from a callback of its own run in the same turn of the event loop (as
 * the callbacks of one socket read are), and counts the writes that reach the connection's socket. The
 * callbacks are immediates queued together, which Node runs in one check phase; timers of 0 ms queued in a
 * loop that crosses a millisecond fall due in two turns, and once made this count 2 in CI.
 * Only that connection's: the test's other connections to the server may write in the same turns.
 */
async function writesForOneTurn(nc: NatsConnection, subject: string, count: number): Promise<number> {
  const port = Number(new URL(natsUrl()).port);
  let writes = 0;
  let own: Socket | undefined;
  const writing = new Set<Socket>();
  const proto = Socket.prototype as unknown as Record<'_write' | '_writev', (...args: unknown[]) => void>;
  const original = { _write: proto._write, _writev: proto._writev };
  for (const method of ['_write', '_writev'] as const)
    proto[method] = function (this: Socket, ...args: unknown[]) {
      if (own === undefined && this.remotePort === port) writing.add(this);
      if (this === own) writes++;
      return original[method].apply(this, args);
    };
  try {
    // The connection's socket is the one that writes its flush's PING.
    for (let attempt = 0; own === undefined && attempt < 5; attempt++) {
      writing.clear();
      await nc.flush();
      if (writing.size === 1) own = [...writing][0];
    }
    if (own === undefined) throw new Error("could not tell the connection's socket from the others");
    await new Promise<void>((resolve) => {
      for (let i = 0; i < count; i++)
        setImmediate(() => {
          nc.publish(subject, String(i));
          if (i === count - 1) setImmediate(() => setImmediate(resolve));
        });
    });
  } finally {
    Object.assign(proto, original);
  }
  return writes;
}

describe('nats writes coalesced per turn', () => {
  it('sends what the callbacks of one turn publish in one write, every message in order', async () => {
    const subject = `${uniquePrefix()}.turn`;
    const listener = await connect({ servers: natsUrl() });
    const coalescing = await connectCoalescing({ servers: natsUrl() });
    const stock = await connect({ servers: natsUrl() });
    onTestFinished(async () => {
      await Promise.all([listener.close(), coalescing.close(), stock.close()]);
    });
    const received: string[] = [];
    listener.subscribe(subject, {
      callback: (_error, msg) => {
        received.push(msg.string());
      },
    });
    await listener.flush();

    // The stock transport writes once per callback: the count shows what the test would see unbatched.
    expect(await writesForOneTurn(stock, subject, 10)).toBe(10);
    expect(await writesForOneTurn(coalescing, subject, 10)).toBe(1);

    await Promise.all([stock.flush(), coalescing.flush()]);
    await expect.poll(() => received.length).toBe(20);
    const numbers = Array.from({ length: 10 }, (_, i) => String(i));
    expect(received).toEqual([...numbers, ...numbers]);
  });

  it('answers requests made from many callbacks of one turn, and still flushes and closes', async () => {
    const subject = `${uniquePrefix()}.echo`;
    const server = await connectCoalescing({ servers: natsUrl() });
    const client = await connectCoalescing({ servers: natsUrl() });
    // Closing is idempotent: this runs whatever fails, after the test's own close.
    onTestFinished(async () => {
      await Promise.all([client.close(), server.close()]);
    });
    server.subscribe(subject, {
      callback: (_error, msg) => {
        msg.respond(msg.data);
      },
    });
    await server.flush();
    const answers = await new Promise<string[]>((resolve, reject) => {
      const pending: Array<Promise<string>> = [];
      for (let i = 0; i < 200; i++)
        setTimeout(() => {
          pending.push(client.request(subject, String(i), { timeout: 5_000 }).then((msg) => msg.string()));
          if (i === 199) Promise.all(pending).then(resolve, reject);
        }, 0);
    });
    expect(answers).toEqual(Array.from({ length: 200 }, (_, i) => String(i)));
    await client.flush();
    await Promise.all([client.close(), server.close()]);
    expect(client.isClosed()).toBe(true);
  });
});
