import { randomUUID } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { EventEnvelope } from '@inbox/contracts';
import type { Pool } from '@inbox/db';
import { AddressPolicy, guardedAgent } from '@inbox/outbound-http';
import { createLogger } from '@inbox/service-kit';
import { migratedPool as migratedDatabase } from '@inbox/testkit';
import { inject } from 'vitest';
import { DeliveryWorker, type DeliveryWorkerOptions } from '../src/delivery-worker.js';
import type { DeliveryStore, EventToSchedule } from '../src/store/deliveries.js';
import type { EndpointStore } from '../src/store/endpoints.js';

/** A pool on a fresh database of this run's Postgres, with the dispatcher's schema migrated. */
export const migratedPool = (): Promise<Pool> =>
  migratedDatabase({
    adminUrl: inject('infra').postgresAdminUrl,
    schema: 'dispatcher',
    migrations: new URL('../migrations', import.meta.url),
  });

export interface Hit {
  /** The request's path and query. */
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  at: number;
}

export interface Receiver {
  url: string;
  hits: Hit[];
  close(): Promise<void>;
}

/** A real HTTP receiver; `answer` decides each response (status, headers, delay, or silence). */
export async function receiver(
  answer: (hit: Hit, res: ServerResponse, index: number) => void = (_hit, res) => res.end('ok'),
): Promise<Receiver> {
  const hits: Hit[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const hit = {
        path: req.url ?? '/',
        headers: req.headers,
        body: Buffer.concat(chunks).toString(),
        at: Date.now(),
      };
      hits.push(hit);
      answer(hit, res, hits.length - 1);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    hits,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

// What messaging's outbox would number each conversation's events.
const lastSequence = new Map<string, number>();

/** A message.sent as messaging writes it: its conversation's next sequence number unless `seq` is given. */
export function messageSent(
  workspaceId: string,
  conversationId = randomUUID(),
  text = 'olá',
  seq = (lastSequence.get(conversationId) ?? 0) + 1,
): EventEnvelope {
  const id = randomUUID();
  lastSequence.set(conversationId, Math.max(seq, lastSequence.get(conversationId) ?? 0));
  return {
    id,
    type: 'message.sent',
    workspace_id: workspaceId,
    occurred_at: new Date().toISOString(),
    ordering: { key: conversationId, seq },
    data: {
      event: 'message.sent',
      workspace_id: workspaceId,
      conversation_id: conversationId,
      message: { id: randomUUID(), text, type: 'text' },
      status: { sender_type: 'agent' },
      integration: { id: randomUUID(), provider: 'chat' },
    },
  };
}

/** Held until `open()`: receivers that wait on it answer together, so their results are recorded together. */
export function gate(): { opened: Promise<void>; open(): void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

/** How many times each event (X-Webhook-Id, sent with or without a secret) reached the receiver. */
export function receiptsById(target: Receiver): Map<string, number> {
  const counts = new Map<string, number>();
  for (const hit of target.hits) {
    const id = String(hit.headers['x-webhook-id']);
    counts.set(id, (counts.get(id) ?? 0) + 1);
  }
  return counts;
}

/**
 * A worker on loopback with 8 slots, a 1 s retry, and a poll far beyond a test's time (only a wake-up or
 * a freed slot starts a lease); `overrides` sets what a test is about.
 */
export function loopbackWorker(
  stores: { pool: Pool; deliveries: DeliveryStore; endpoints: EndpointStore },
  overrides: Partial<DeliveryWorkerOptions> = {},
): DeliveryWorker {
  const policy = AddressPolicy.fromSetting('127.0.0.0/8');
  const timeoutMs = overrides.timeoutMs ?? 2_000;
  return new DeliveryWorker({
    ...stores,
    agent: guardedAgent(policy, timeoutMs),
    policy,
    logger: createLogger('dispatcher-test', { level: 'silent' }),
    timeoutMs,
    retry: { scheduleSeconds: [1] },
    concurrency: 8,
    perEndpointConcurrency: 8,
    disableAfterMs: 3_600_000,
    pollMs: 600_000,
    consumerLag: async () => 0,
    ...overrides,
  });
}

/** A `message.sent` event with an empty body, to schedule straight into the store. */
export function eventToSchedule(
  workspaceId: string,
  { eventId = randomUUID(), ordering = null }: Partial<Pick<EventToSchedule, 'eventId' | 'ordering'>> = {},
): EventToSchedule {
  return { workspaceId, eventId, eventType: 'message.sent', body: '{}', ordering, traceContext: {} };
}
