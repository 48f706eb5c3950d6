import { pbkdf2 } from 'node:crypto';
import { createSocket, type Socket } from 'node:dgram';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HostResolver } from '../src/host-resolver.js';

// A name server that takes every query and never answers, as one a tenant controls may.
let silent: Socket;
const queries: Buffer[] = [];
let server: string;

beforeAll(async () => {
  silent = createSocket('udp4');
  silent.on('message', (message) => queries.push(message));
  await new Promise<void>((resolve) => silent.bind(0, '127.0.0.1', resolve));
  server = `127.0.0.1:${(silent.address() as AddressInfo).port}`;
});
afterAll(() => silent.close());

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
});
