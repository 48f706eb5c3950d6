import { pbkdf2 } from 'node:crypto';
import { type NameServer, startNameServer, systemResolverStandIn, waitFor } from '@inbox/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HostResolver } from '../src/host-resolver.js';

// A name server that takes every query and never answers, as one a tenant controls may.
let silent: NameServer;
let server: string;
// A name server that knows no name: it answers every query NXDOMAIN at once.
let unknowing: NameServer;
let unknowingServer: string;
let queries: Buffer[];

beforeAll(async () => {
  silent = await startNameServer('silent');
  server = silent.address;
  queries = silent.queries;
  unknowing = await startNameServer('unknowing');
  unknowingServer = unknowing.address;
});
afterAll(async () => {
  await silent.close();
  await unknowing.close();
});

/**
 * A resolver whose name servers know no name, so that every name goes to the system resolver, here as a
 * tenant's name server can make it: it never answers names under `silent.example`.
 */
function behindTheSystem(settings: { queryTimeoutMs: number; systemLookups?: number }) {
  const system = systemResolverStandIn();
  const resolver = new HostResolver({ tries: 1, servers: [unknowingServer], ...settings }, system.lookup);
  return { system, resolver };
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
    const { system, resolver } = behindTheSystem({ queryTimeoutMs: 200 });
    const started = Date.now();
    // Names the name servers say they do not know, whose own server then keeps silent when the system asks.
    const lookups = Array.from({ length: 16 }, (_, i) => outcome(resolver.resolve(`n${i}.silent.example`)));
    const settled = await Promise.race([
      Promise.all(lookups),
      new Promise((resolve) => setTimeout(() => resolve('still waiting'), 3_000)),
    ]);
    expect(settled).toEqual(Array(16).fill('ETIMEOUT'));
    expect(Date.now() - started).toBeLessThan(3_000);
    // The first held the tenant's one turn (one thread of libuv's pool); the others never reached it.
    expect(system.seen.asked).toEqual(['n0.silent.example']);
    expect(system.seen.mostAtOnce).toBe(1);
  });

  it('takes names only the system knows one after another, each answered', async () => {
    const { system, resolver } = behindTheSystem({ queryTimeoutMs: 500 });
    const names = ['receiver', 'receiver.team', 'provider', 'provider.team'];
    const found = await Promise.all(names.map((name) => resolver.resolve(name)));
    expect(found.map((addresses) => addresses.map((entry) => entry.address))).toEqual(
      Array(4).fill(['10.0.0.7']),
    );
    expect([...system.seen.asked].sort()).toEqual([...names].sort());
    expect(system.seen.mostAtOnce).toBe(1);
  });

  it("gives each tenant one turn with the system, so one tenant's silent names never delay another's names", async () => {
    const { system, resolver } = behindTheSystem({ queryTimeoutMs: 300, systemLookups: 2 });
    const hostile = Array.from({ length: 8 }, (_, i) =>
      outcome(resolver.resolve(`n${i}.silent.example`, 'hostile')),
    );
    await waitFor(() => system.seen.asked.length > 0, { timeoutMs: 2_000, intervalMs: 5 });
    // The hostile tenant asks for another tenant's name too: its own lookup, behind its own held turn.
    const hostileAsksOthersName = outcome(resolver.resolve('receiver', 'hostile'));
    const names = ['receiver', 'provider', 'receiver.team'];
    const found = await Promise.all(names.map((name) => resolver.resolve(name, 'other')));
    expect(found.map((addresses) => addresses.map((entry) => entry.address))).toEqual(
      Array(3).fill(['10.0.0.7']),
    );
    expect(await Promise.all(hostile)).toEqual(Array(8).fill('ETIMEOUT'));
    expect(await hostileAsksOthersName).toBe('ETIMEOUT');
    // One of the hostile tenant's names held its turn; the other tenant's took the second, one at a time.
    expect(system.seen.asked.filter((name) => name.endsWith('.silent.example'))).toHaveLength(1);
    expect(system.seen.asked.filter((name) => !name.endsWith('.silent.example'))).toEqual(names);
    expect(system.seen.mostAtOnce).toBe(2);
  });

  it('never has more names with the system at once than it has turns, whatever the tenants', async () => {
    const { system, resolver } = behindTheSystem({ queryTimeoutMs: 300, systemLookups: 2 });
    const lookups = ['a', 'b', 'c'].map((tenant) =>
      outcome(resolver.resolve(`${tenant}.silent.example`, tenant)),
    );
    expect(await Promise.all(lookups)).toEqual(Array(3).fill('ETIMEOUT'));
    expect(system.seen.asked).toHaveLength(2);
    expect(system.seen.mostAtOnce).toBe(2);
  });
});
