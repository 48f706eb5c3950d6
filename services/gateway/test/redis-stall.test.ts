import { randomUUID } from 'node:crypto';
import { createServer, connect as dial, type Server, type Socket } from 'node:net';
import { createLogger } from '@inbox/service-kit';
import { freePort } from '@inbox/testkit';
import type { Redis } from 'ioredis';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { connectRedis } from '../src/rate-limit/redis-client.js';
import { WorkspaceRateLimiter } from '../src/rate-limit/workspace-rate-limiter.js';

// A Redis that accepts connections but never answers, from the start or after a while (a stuck
// process, a network path that drops packets): rate-limit decisions must still come within a bound.

const logger = createLogger('gateway', { level: 'silent' });
const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function listenOn(server: Server): Promise<number> {
  const port = await freePort();
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  cleanups.push(() => new Promise((resolve) => server.close(resolve)));
  return port;
}

/** A plain TCP server that reads whatever it is sent and never writes. */
async function silentServer(): Promise<number> {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.resume();
  });
  cleanups.push(() => {
    for (const socket of sockets) socket.destroy();
  });
  return listenOn(server);
}

/** Passes traffic to the real Redis until `stall()`, then keeps reading and stops answering. */
async function stallingProxy(): Promise<{ port: number; stall: () => void }> {
  const upstream = new URL(inject('infra').redisUrl);
  let stalled = false;
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const redis = dial(Number(upstream.port), upstream.hostname);
    sockets.add(client).add(redis);
    client.on('data', (chunk) => {
      if (!stalled) redis.write(chunk);
    });
    redis.on('data', (chunk) => {
      if (!stalled) client.write(chunk);
    });
    client.on('error', () => redis.destroy());
    redis.on('error', () => client.destroy());
  });
  cleanups.push(() => {
    for (const socket of sockets) socket.destroy();
  });
  return { port: await listenOn(server), stall: () => (stalled = true) };
}

function client(port: number): Redis {
  const redis = connectRedis(`redis://127.0.0.1:${port}`, logger);
  cleanups.push(() => redis.disconnect());
  return redis;
}

/** The decision and how long it took; a stalled one fails the test after 3 s instead of hanging it. */
async function timed<T>(work: Promise<T>): Promise<{ value: T; ms: number }> {
  const started = Date.now();
  let timer: NodeJS.Timeout | undefined;
  const stalled = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error('no decision within 3 s')), 3_000);
  });
  try {
    const value = await Promise.race([work, stalled]);
    return { value, ms: Date.now() - started };
  } finally {
    clearTimeout(timer);
  }
}

describe('rate limiting in front of a Redis that does not answer', () => {
  it('decides in memory at once when Redis never answered', async () => {
    const limiter = new WorkspaceRateLimiter(2, logger, client(await silentServer()));
    const workspace = randomUUID();
    const decisions = [];
    for (let i = 0; i < 3; i++) {
      const { value, ms } = await timed(limiter.take(workspace));
      expect(ms).toBeLessThan(1_000);
      decisions.push(value.allowed);
    }
    expect(decisions).toEqual([true, true, false]);
  });

  it('falls back within the command timeout when Redis stops answering, then stops asking it for a while', async () => {
    const proxy = await stallingProxy();
    const redis = client(proxy.port);
    await new Promise((resolve) => redis.once('ready', resolve));
    const limiter = new WorkspaceRateLimiter(5, logger, redis);
    const workspace = randomUUID();
    expect((await limiter.take(workspace)).remaining).toBe(4);

    proxy.stall();
    const first = await timed(limiter.take(workspace));
    expect(first.value.allowed).toBe(true);
    expect(first.ms).toBeLessThan(1_500);
    // The fallback counts alone from here; Redis is not asked again for a few seconds.
    const next = await timed(limiter.take(workspace));
    expect(next.value.allowed).toBe(true);
    expect(next.ms).toBeLessThan(100);
  });
});

describe('a workspace over its budget', () => {
  it('is refused from memory until its window ends, without asking Redis again', async () => {
    const proxy = await stallingProxy();
    const redis = client(proxy.port);
    await new Promise((resolve) => redis.once('ready', resolve));
    const limiter = new WorkspaceRateLimiter(2, logger, redis);
    const workspace = randomUUID();
    const decisions = [];
    for (let i = 0; i < 3; i++) decisions.push((await limiter.take(workspace)).allowed);
    expect(decisions).toEqual([true, true, false]);

    // Redis stops answering: a decision that asked it would wait for the command timeout and then let
    // the request through on the fallback's fresh budget. This one is refused at once, from memory.
    proxy.stall();
    const refused = await timed(limiter.take(workspace));
    expect(refused.value).toMatchObject({ allowed: false, remaining: 0 });
    expect(refused.value.resetSeconds).toBeGreaterThan(50);
    expect(refused.ms).toBeLessThan(100);
  });
});
