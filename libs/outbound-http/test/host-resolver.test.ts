import { pbkdf2 } from 'node:crypto';
import { createSocket, type Socket } from 'node:dgram';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HostResolver, type SystemLookup } from '../src/host-resolver.js';

// A name server that takes every query and never answers, as one a tenant controls may.
let silent: Socket;
const queries: Buffer[] = [];
let server: string;
// A name server that knows no name: it answers every query NXDOMAIN at once.
let unknowing: Socket;
let unknowingServer: string;

async function bound(socket: Socket): Promise<string> {
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  return `127.0.0.1:${(socket.address() as AddressInfo).port}`;
}

beforeAll(async () => {
  silent = createSocket('udp4');
  silent.on('message', (message) => queries.push(message));
  server = await bound(silent);
  unknowing = createSocket('udp4');
  unknowing.on('message', (query, from) => {
    const answer = Buffer.from(query);
    answer[2] = (answer[2] ?? 0) | 0x80; // a response, the question's id and recursion flag kept
    answer[3] = 0x80 | 3; // recursion available, NXDOMAIN
    unknowing.send(answer, from.port, from.address);
  });
  unknowingServer = await bound(unknowing);
});
afterAll(() => {
  silent.close();
  unknowing.close();
});

/** The system resolver as a tenant's name server can make it: it never answers names under `silent.example`. */
function systemResolver() {
  const seen = { asked: [] as string[], atOnce: 0, mostAtOnce: 0 };
  const lookup: SystemLookup = (hostname) => {
    seen.asked.push(hostname);
    seen.mostAtOnce = Math.max(seen.mostAtOnce, ++seen.atOnce);
    if (hostname.endsWith('.silent.example')) return new Promise(() => undefined);
    return new Promise((resolve) =>
      setTimeout(() => {
        seen.atOnce--;
        resolve([{ address: '10.0.0.7', family: 4 }]);
      }, 10),
    );
  };
  return { lookup, seen };
}

const outcome = (resolving: Promise<unknown>) =>
  resolving.then(
    () => 'resolved',
    (error: NodeJS.ErrnoException) => error.code,
  );

describe('HostResolver', () => {
  it('gives up on a silent name server with its own timeout, asks the system nothing, and leaves the thread pool free', async () => {
    const resolver = new HostResolver({ queryTimeoutMs: 200, tries: 1, servers: [server] });
    // More names than the thread pool has threads, as a tenant's endpoints on its own domain would be.
    const lookups = Array.from({ length: 16 }, (_, i) => outcome(resolver.resolve(`n${i}.silent.example`)));
    // Work of the thread pool finishes while every lookup waits on the silent server.
    await new Promise<void>((resolve, reject) =>
      pbkdf2('secret', 'salt', 1, 32, 'sha256', (error) => (error ? reject(error) : resolve())),
    );
    expect(await Promise.race([Promise.all(lookups), 'still waiting'])).toBe('still waiting');
    // Timed out, not handed to the system resolver (which would have answered ENOTFOUND).
    expect(await Promise.all(lookups)).toEqual(Array(16).fill('ETIMEOUT'));
    expect(queries.length).toBeGreaterThanOrEqual(16);
  });

  it('makes the lookups of one name under way at once one lookup', async () => {
    const resolver = new HostResolver({ queryTimeoutMs: 200, tries: 1, servers: [server] });
    const before = queries.length;
    const lookups = Array.from({ length: 8 }, () => outcome(resolver.resolve('same.silent.example')));
    expect(await Promise.all(lookups)).toEqual(Array(8).fill('ETIMEOUT'));
    // One A and one AAAA query, not eight of each.
    expect(queries.length - before).toBe(2);
  });

  it('resolves localhost from the system, without a name server', async () => {
    const resolver = new HostResolver({ queryTimeoutMs: 200, tries: 1, servers: [server] });
    const before = queries.length;
    const addresses = await resolver.resolve('localhost');
    expect(addresses.map((entry) => entry.address)).toEqual(
      expect.arrayContaining([expect.stringMatching(/^(127\.0\.0\.1|::1)$/)]),
    );
    expect(queries.length).toBe(before);
  });

  it("asks the system one name at a time, and answers within the name servers' bound when the system keeps silent", async () => {
    const system = systemResolver();
    const resolver = new HostResolver(
      { queryTimeoutMs: 200, tries: 1, servers: [unknowingServer] },
      system.lookup,
    );
    const started = Date.now();
    // Names the name servers say they do not know, whose own server then keeps silent when the system asks.
    const lookups = Array.from({ length: 16 }, (_, i) => outcome(resolver.resolve(`n${i}.silent.example`)));
    const settled = await Promise.race([
      Promise.all(lookups),
      new Promise((resolve) => setTimeout(() => resolve('still waiting'), 3_000)),
    ]);
    expect(settled).toEqual(Array(16).fill('ETIMEOUT'));
    expect(Date.now() - started).toBeLessThan(3_000);
    // The first held the system's one turn (one thread of libuv's pool); the others never reached it.
    expect(system.seen.asked).toEqual(['n0.silent.example']);
    expect(system.seen.mostAtOnce).toBe(1);
  });

  it('takes names only the system knows one after another, each answered', async () => {
    const system = systemResolver();
    const resolver = new HostResolver(
      { queryTimeoutMs: 500, tries: 1, servers: [unknowingServer] },
      system.lookup,
    );
    const names = ['receiver', 'receiver.team', 'provider', 'provider.team'];
    const found = await Promise.all(names.map((name) => resolver.resolve(name)));
    expect(found.map((addresses) => addresses.map((entry) => entry.address))).toEqual(
      Array(4).fill(['10.0.0.7']),
    );
    expect([...system.seen.asked].sort()).toEqual([...names].sort());
    expect(system.seen.mostAtOnce).toBe(1);
  });
});
