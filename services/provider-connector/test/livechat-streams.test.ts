import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Pool } from '@inbox/db';
import { createLogger } from '@inbox/service-kit';
import { waitFor } from '@inbox/testkit';
import type { Response } from 'express';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { LivechatStore } from '../src/livechat/store.js';
import { LivechatStreams } from '../src/livechat/streams.js';
import { migratedPool } from './support.js';

let pool: Pool;
let server: Server;
let url: string;
let streams: LivechatStreams;

beforeAll(async () => {
  pool = await migratedPool();
  streams = new LivechatStreams(
    new LivechatStore(pool),
    createLogger('provider-connector', { level: 'silent' }),
    {
      perSession: 5,
      perIntegration: 2,
      perProcess: 100,
      sweepMs: 60_000,
    },
  );
  // Real responses held open, as the stream route holds them: /<integration>/<session>; 429 if refused.
  server = createServer((req, res) => {
    const [, integrationId, sessionId] = (req.url ?? '').split('/');
    if (!streams.attach(integrationId!, sessionId!, res as unknown as Response, 0n)) {
      res.writeHead(429).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write('retry: 2000\n\n');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server?.closeAllConnections();
  server?.close();
  await pool?.end();
});

/** Opens a stream for a new session of the integration: its status, and how to close it if held. */
async function open(integrationId: string) {
  const controller = new AbortController();
  const response = await fetch(`${url}/${integrationId}/${randomUUID()}`, { signal: controller.signal });
  return { status: response.status, close: () => controller.abort() };
}

it("holds no more of one integration's streams than its share, and still takes another integration's", async () => {
  const busy = randomUUID();
  const other = randomUUID();
  const held = [await open(busy), await open(busy)];
  expect(held.map((stream) => stream.status)).toEqual([200, 200]);
  // The third of the busy integration's visitors is refused; another integration's is taken.
  expect((await open(busy)).status).toBe(429);
  const taken = await open(other);
  expect(taken.status).toBe(200);

  // A stream closed gives its place back.
  held[0]!.close();
  const again = await waitFor(
    async () => {
      const stream = await open(busy);
      return stream.status === 200 ? stream : undefined;
    },
    { what: "the busy integration's freed place" },
  );
  for (const stream of [held[1]!, taken, again]) stream.close();
});
