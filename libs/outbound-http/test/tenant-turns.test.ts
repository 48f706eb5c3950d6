import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type NameServer, startNameServer, systemResolverStandIn, waitFor } from '@inbox/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AddressPolicy, guardedJson, HostResolver, OutboundGuard } from '../src/index.js';

// Names the name servers say they do not know go to the system resolver (HostResolver).
let unknowing: NameServer;
let receiver: Server;
let port: number;

beforeAll(async () => {
  unknowing = await startNameServer('unknowing');
  receiver = createServer((_req, res) => res.end('{"ok":true}')).listen(0, '127.0.0.1');
  await once(receiver, 'listening');
  port = (receiver.address() as AddressInfo).port;
});
afterAll(async () => {
  await unknowing.close();
  receiver.close();
});

describe('an outbound call as its tenant', () => {
  it("takes its tenant's turn with the system resolver in the lookup its connection makes", async () => {
    // Every name the system knows is the receiver on loopback; it never answers under silent.example.
    const system = systemResolverStandIn('127.0.0.1');
    const resolver = new HostResolver(
      { queryTimeoutMs: 500, tries: 1, servers: [unknowing.address], systemLookups: 2 },
      system.lookup,
    );
    const guard = new OutboundGuard(AddressPolicy.fromSetting('127.0.0.0/8'), { timeoutMs: 2_000, resolver });
    try {
      // One tenant's receiver behind a name its own name server keeps silent on holds that tenant's turn.
      const held = guardedJson(guard, `http://hook.silent.example:${port}/`, { tenant: 'hostile' }).catch(
        (error: Error) => error,
      );
      await waitFor(() => system.seen.asked.length > 0, { timeoutMs: 2_000, intervalMs: 5 });
      const waiting = guardedJson(guard, `http://receiver.hostile:${port}/`, { tenant: 'hostile' }).catch(
        (error: Error) => error,
      );
      // Another tenant's calls are looked up in their own turn and answered.
      const other = await guardedJson(guard, `http://receiver.other:${port}/`, { tenant: 'other' });
      expect(other.body).toEqual({ ok: true });
      expect(await waiting).toMatchObject({ code: 'ETIMEOUT' });
      expect(system.seen.asked).toEqual(['hook.silent.example', 'receiver.other']);
      expect((await held) as Error).toBeInstanceOf(Error);
    } finally {
      await guard.close();
    }
  });
});
