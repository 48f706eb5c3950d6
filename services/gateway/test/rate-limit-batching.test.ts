import { randomUUID } from 'node:crypto';
import { createServer, connect as dial, type Socket } from 'node:net';
import { createLogger } from '@inbox/service-kit';
import { freePort } from '@inbox/testkit';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { connectRedis } from '../src/rate-limit/redis-client.js';
import { WorkspaceRateLimiter } from '../src/rate-limit/workspace-rate-limiter.js';

// The requests of one workspace that reach the limiter in the same turn are counted by one Redis
// command; each must still get the decision and the `remaining` that a command of its own would give.

const logger = createLogger('gateway', { level: 'silent' });
const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Passes traffic to the real Redis and counts the scripts it is asked to run (the limiter's count). */
async function countingProxy(): Promise<{ port: number; scripts: () => number }> {
  const upstream = new URL(inject('infra').redisUrl);
  let scripts = 0;
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const redis = dial(Number(upstream.port), upstream.hostname);
    sockets.add(client).add(redis);
    client.on('data', (chunk) => {
      scripts += chunk.toString('latin1').match(/\r\nevalsha\r\n|\r\neval\r\n/gi)?.length ?? 0;
      redis.write(chunk);
    });
    redis.on('data', (chunk) => client.write(chunk));
    client.on('error', () => redis.destroy());
    redis.on('error', () => client.destroy());
  });
  const port = await freePort();
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  cleanups.push(() => new Promise((resolve) => server.close(resolve)));
  cleanups.push(() => {
    for (const socket of sockets) socket.destroy();
  });
  return { port, scripts: () => scripts };
}

async function limiterThroughProxy(perMinute: number) {
  const proxy = await countingProxy();
  const redis = connectRedis(`redis://127.0.0.1:${proxy.port}`, logger);
  cleanups.push(() => redis.disconnect());
  await new Promise((resolve) => redis.once('ready', resolve));
  return { limiter: new WorkspaceRateLimiter(perMinute, logger, redis), scripts: proxy.scripts, redis };
}

/** Counts the writes the client makes to its socket while `work` runs. */
async function socketWrites(socket: Socket, work: () => Promise<unknown>): Promise<number> {
  let writes = 0;
  const counted = socket as unknown as Record<'_write' | '_writev', (...args: unknown[]) => void>;
  const original = { _write: counted._write, _writev: counted._writev };
  for (const method of ['_write', '_writev'] as const)
    counted[method] = function (this: Socket, ...args: unknown[]) {
      writes++;
      return original[method].apply(this, args);
    };
  try {
    await work();
  } finally {
    Object.assign(counted, original);
  }
  return writes;
}

describe('requests of one turn counted together', () => {
  it('gives each request its own place in the shared count, in arrival order, for one command', async () => {
    const { limiter, scripts } = await limiterThroughProxy(5);
    const workspace = randomUUID();
    const decisions = await Promise.all(Array.from({ length: 8 }, () => limiter.take(workspace)));
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, true, true, false, false, false]);
    expect(decisions.map((d) => d.remaining)).toEqual([4, 3, 2, 1, 0, 0, 0, 0]);
    expect(decisions.every((d) => d.limit === 5 && d.resetSeconds > 50 && d.resetSeconds <= 60)).toBe(true);
    expect(scripts()).toBe(1);

    // The count went on from where the batch left it: the next request, alone, is the ninth.
    const ninth = await limiter.take(workspace);
    expect(ninth).toMatchObject({ allowed: false, remaining: 0 });
  });

  it('counts the batch on top of what earlier requests used', async () => {
    const { limiter, scripts } = await limiterThroughProxy(4);
    const workspace = randomUUID();
    expect((await limiter.take(workspace)).remaining).toBe(3);
    const decisions = await Promise.all(Array.from({ length: 4 }, () => limiter.take(workspace)));
    expect(decisions.map((d) => [d.allowed, d.remaining])).toEqual([
      [true, 2],
      [true, 1],
      [true, 0],
      [false, 0],
    ]);
    expect(scripts()).toBe(2);
  });

  it("counts each workspace by a command of its own, so one workspace's burst spends no other's budget", async () => {
    const { limiter, scripts } = await limiterThroughProxy(3);
    const busy = randomUUID();
    const quiet = randomUUID();
    const [busyDecisions, quietDecision] = await Promise.all([
      Promise.all(Array.from({ length: 6 }, () => limiter.take(busy))),
      limiter.take(quiet),
    ]);
    expect(busyDecisions.filter((d) => d.allowed)).toHaveLength(3);
    expect(quietDecision).toMatchObject({ allowed: true, remaining: 2 });
    expect(scripts()).toBe(2);
  });

  it('writes the commands of one turn, one per workspace, to Redis in one write', async () => {
    const { limiter, scripts, redis } = await limiterThroughProxy(10);
    // Once, so that Redis has the script: its first use is answered NOSCRIPT and sent again.
    await limiter.take(randomUUID());
    const before = scripts();
    const workspaces = [randomUUID(), randomUUID(), randomUUID()];
    const writes = await socketWrites(redis.stream as Socket, () =>
      Promise.all(workspaces.map((workspace) => limiter.take(workspace))),
    );
    expect(scripts() - before).toBe(3);
    expect(writes).toBe(1);
  });

  it('refuses a whole turn from memory once the workspace is over its budget', async () => {
    const { limiter, scripts } = await limiterThroughProxy(2);
    const workspace = randomUUID();
    await Promise.all(Array.from({ length: 3 }, () => limiter.take(workspace)));
    expect(scripts()).toBe(1);
    const later = await Promise.all(Array.from({ length: 5 }, () => limiter.take(workspace)));
    expect(later.every((d) => !d.allowed && d.remaining === 0 && d.resetSeconds > 50)).toBe(true);
    expect(scripts()).toBe(1);
  });

  it('counts a turn the same way in memory, without Redis', async () => {
    const limiter = new WorkspaceRateLimiter(3, logger);
    const workspace = randomUUID();
    const decisions = await Promise.all(Array.from({ length: 5 }, () => limiter.take(workspace)));
    expect(decisions.map((d) => [d.allowed, d.remaining])).toEqual([
      [true, 2],
      [true, 1],
      [true, 0],
      [false, 0],
      [false, 0],
    ]);
  });
});
