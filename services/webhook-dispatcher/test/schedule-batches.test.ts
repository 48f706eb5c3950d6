import { randomUUID } from 'node:crypto';
import type { Pool } from '@inbox/db';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DeliveryStore, type EventToSchedule } from '../src/store/deliveries.js';
import { ScheduleBatches } from '../src/store/schedule-batches.js';
import { migratedPool } from './support.js';

let pool: Pool;

beforeAll(async () => {
  pool = await migratedPool();
});
afterAll(async () => {
  await pool?.end();
});

async function endpoint(workspaceId: string, events: string[]) {
  const id = randomUUID();
  await pool.query('insert into endpoints (id, workspace_id, url, events) values ($1, $2, $3, $4)', [
    id,
    workspaceId,
    'https://receiver.example/hook',
    events,
  ]);
  return id;
}

const event = (
  workspaceId: string,
  type = 'message.sent',
  ordering: EventToSchedule['ordering'] = null,
): EventToSchedule => ({
  workspaceId,
  eventId: randomUUID(),
  eventType: type,
  body: JSON.stringify({ event: type, workspace_id: workspaceId }),
  ordering,
  traceContext: { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' },
});

const deliveriesOf = async (eventId: string) =>
  (
    await pool.query<{ endpoint_id: string; workspace_id: string }>(
      'select endpoint_id, workspace_id from deliveries where event_id = $1',
      [eventId],
    )
  ).rows;

/** The store, counting the statements the batches make. */
class CountingStore extends DeliveryStore {
  batches: number[] = [];
  override scheduleMany(events: readonly EventToSchedule[]) {
    this.batches.push(events.length);
    return super.scheduleMany(events);
  }
}

describe('scheduling several events in one statement', () => {
  it("gives each event its own workspace's subscribed endpoints, and notes each ordered event", async () => {
    const [a, b] = [randomUUID(), randomUUID()];
    const aAll = await endpoint(a, ['*']);
    const aSent = await endpoint(a, ['message.sent']);
    const bReceived = await endpoint(b, ['message.received']);
    const key = `${a}:${randomUUID()}`;
    const events = [
      event(a, 'message.sent', { key, seq: 1 }),
      event(b, 'message.sent'),
      event(b, 'message.received'),
      event(a, 'conversation.resolved', { key, seq: 2 }),
    ];
    const store = new DeliveryStore(pool);
    expect(await store.scheduleMany(events)).toEqual([2, 0, 1, 1]);
    expect((await deliveriesOf(events[0]!.eventId)).map((d) => d.endpoint_id).sort()).toEqual(
      [aAll, aSent].sort(),
    );
    expect(await deliveriesOf(events[1]!.eventId)).toEqual([]);
    expect(await deliveriesOf(events[2]!.eventId)).toEqual([{ endpoint_id: bReceived, workspace_id: b }]);
    const { rows } = await pool.query('select upto, ahead from ordering_progress where ordering_key = $1', [
      key,
    ]);
    expect(rows).toEqual([{ upto: 2, ahead: [] }]);
    // Redelivered: nothing scheduled twice.
    expect(await store.scheduleMany(events)).toEqual([0, 0, 0, 0]);
  });
});

describe('group commit', () => {
  it('writes the events that arrive while a statement runs together, and answers each with its own count', async () => {
    const workspace = randomUUID();
    await endpoint(workspace, ['message.sent']);
    const store = new CountingStore(pool);
    const batches = new ScheduleBatches(store, 16);
    const events = Array.from({ length: 40 }, () => event(workspace));
    const counts = await Promise.all(events.map((e) => batches.schedule(e)));
    expect(counts).toEqual(Array(40).fill(1));
    // The first alone, then the rest in batches of at most 16 as they waited.
    expect(store.batches[0]).toBe(1);
    expect(store.batches.every((size) => size <= 16)).toBe(true);
    expect(store.batches.reduce((sum, size) => sum + size, 0)).toBe(40);
    expect(store.batches.length).toBeLessThanOrEqual(4);
  });

  it('refuses only the event at fault when a batch fails, and schedules its neighbours', async () => {
    const workspace = randomUUID();
    await endpoint(workspace, ['message.sent']);
    const batches = new ScheduleBatches(new DeliveryStore(pool));
    // Keeps the first statement running, so the next three share one.
    const first = batches.schedule(event(workspace));
    const good = [event(workspace), event(workspace)];
    const bad = { ...event(workspace), workspaceId: 'not-a-workspace-id' };
    const outcomes = await Promise.allSettled([
      batches.schedule(good[0]!),
      batches.schedule(bad),
      batches.schedule(good[1]!),
    ]);
    expect(await first).toBe(1);
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    for (const e of good) expect(await deliveriesOf(e.eventId)).toHaveLength(1);
  });
});

describe('the delivery log', () => {
  it('pages through deliveries scheduled together, each once, by the last one seen', async () => {
    const workspaceId = randomUUID();
    const endpointId = await endpoint(workspaceId, ['*']);
    const store = new DeliveryStore(pool);
    // Five events scheduled in one statement: their deliveries share one creation time.
    const events = Array.from({ length: 5 }, () => event(workspaceId));
    await store.scheduleMany(events);
    const seen: string[] = [];
    let before: string | undefined;
    for (let page = 0; page < 4; page++) {
      const deliveries = (await store.list(workspaceId, endpointId, {
        limit: 2,
        ...(before ? { before } : {}),
      })) as { id: string; event_id: string }[];
      seen.push(...deliveries.map((delivery) => delivery.event_id));
      if (deliveries.length < 2) break;
      before = deliveries.at(-1)!.id;
    }
    expect(seen.sort()).toEqual(events.map((e) => e.eventId).sort());
    // Another workspace's delivery named as the cursor lists nothing of this one's.
    const other = randomUUID();
    const otherEndpoint = await endpoint(other, ['*']);
    await store.scheduleMany([event(other)]);
    const [foreign] = (await store.list(other, otherEndpoint, { limit: 1 })) as { id: string }[];
    expect(await store.list(workspaceId, endpointId, { limit: 5, before: foreign!.id })).toEqual([]);
  });
});
