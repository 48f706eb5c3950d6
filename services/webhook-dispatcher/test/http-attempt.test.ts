import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { AddressPolicy, guardedAgent, HostResolver } from '@inbox/outbound-http';
import { type NameServer, startNameServer, systemResolverStandIn, waitFor } from '@inbox/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attemptDelivery } from '../src/domain/http-attempt.js';

// Receivers' names the name servers do not know go to the system resolver (HostResolver).
let unknowing: NameServer;
let receiver: Server;
let port: number;
const received: IncomingHttpHeaders[] = [];

beforeAll(async () => {
  unknowing = await startNameServer('unknowing');
  receiver = createServer((req, res) => {
    received.push(req.headers);
    res.end('ok');
  }).listen(0, '127.0.0.1');
  await once(receiver, 'listening');
  port = (receiver.address() as AddressInfo).port;
});
afterAll(async () => {
  await unknowing.close();
  receiver.close();
});

const delivery = (workspaceId: string, host: string) => ({
  workspaceId,
  url: `http://${host}:${port}/hook`,
  body: '{"event":"message.sent"}',
  eventId: '00000000-0000-4000-8000-000000000001',
  eventType: 'message.sent',
  secret: null,
  previousSecret: null,
});

describe('a delivery attempt', () => {
  it("looks its receiver's name up as its workspace's: another workspace's silent name never delays it", async () => {
    // Every name the system knows is the receiver on loopback; it never answers under silent.example.
    const system = systemResolverStandIn('127.0.0.1');
    const resolver = new HostResolver(
      { queryTimeoutMs: 500, tries: 1, servers: [unknowing.address], systemLookups: 2 },
      system.lookup,
    );
    const policy = AddressPolicy.fromSetting('127.0.0.0/8');
    const agent = guardedAgent(policy, 2_000, resolver);
    const deps = { agent, policy, timeoutMs: 2_000 };
    try {
      const held = attemptDelivery(delivery('hostile', 'hook.silent.example'), deps);
      await waitFor(() => system.seen.asked.length > 0, { timeoutMs: 2_000, intervalMs: 5 });
      const waiting = attemptDelivery(delivery('hostile', 'receiver.hostile'), deps);
      const other = await attemptDelivery(delivery('other', 'receiver.other'), deps);
      expect(other).toMatchObject({ statusCode: 200, error: null });
      expect(await waiting).toMatchObject({ statusCode: null, error: 'timed out after 2000 ms' });
      expect(await held).toMatchObject({ statusCode: null });
      expect(system.seen.asked).toEqual(['hook.silent.example', 'receiver.other']);
      expect(received).toHaveLength(1);
    } finally {
      await agent.close();
    }
  });
});
