import { randomUUID } from 'node:crypto';
import type { Pool } from '@inbox/db';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DeliveryStore, type EventToSchedule } from '../src/store/deliveries.js';
import { eventToSchedule, migratedPool } from './support.js';

let pool: Pool;
let store: DeliveryStore;

beforeAll(async () => {
  pool = await migratedPool();
  store = new DeliveryStore(pool);
});
afterAll(async () => {
  await pool?.end();
});

const leaseMs = 60_000;
const gapWaitMs = 600_000;

async function endpoint(options: { ordered?: boolean; enabled?: boolean; workspaceId?: string } = {}) {
  const id = randomUUID();
  const workspaceId = options.workspaceId ?? randomUUID();
  await pool.query(
    'insert into endpoints (id, workspace_id, url, events, ordered, enabled) values ($1, $2, $3, $4, $5, $6)',
    [
      id,
      workspaceId,
      'https://receiver.example/hook',
      ['*'],
      options.ordered ?? false,
      options.enabled ?? true,
    ],
  );
  return { id, workspaceId };
}

/** Schedules `count` events for the endpoint's workspace, each due a millisecond after the one before. */
async function schedule(
  target: { workspaceId: string },
  count: number,
  ordering?: (i: number) => EventToSchedule['ordering'],
) {
  const events = Array.from({ length: count }, (_, i) =>
    eventToSchedule(target.workspaceId, { ordering: ordering?.(i) }),
  );
  await store.scheduleMany(events);
  await pool.query(
    `update deliveries d set next_attempt_at = now() - interval '1 hour' + o.i * interval '1 millisecond'
       from unnest($1::uuid[]) with ordinality as o(event_id, i) where d.event_id = o.event_id`,
    [events.map((e) => e.eventId)],
  );
  return events.map((e) => e.eventId);
}

// Everything still pending or in flight is finished, so each test leases only its own deliveries.
async function clear() {
  await pool.query(
    "update deliveries set status = 'delivered', lease_until = null where status in ('pending', 'sending')",
  );
}

/** The leased deliveries' events (of one endpoint if given), sorted: a lease returns them in no order. */
const eventsOf = (leased: Array<{ endpoint_id: string; event_id: string }>, endpointId?: string) =>
  leased
    .filter((d) => !endpointId || d.endpoint_id === endpointId)
    .map((d) => d.event_id)
    .sort();

const lease = (limit: number, perEndpoint: number) => store.lease(limit, perEndpoint, leaseMs, gapWaitMs);

describe('leasing due deliveries', () => {
  it("leases another endpoint's delivery while an endpoint with a long queue is at its cap", async () => {
    await clear();
    const flooding = await endpoint();
    await schedule(flooding, 2_000);
    expect(await lease(8, 8)).toHaveLength(8);
    const quiet = await endpoint();
    const [waiting] = await schedule(quiet, 1);
    await pool.query('update deliveries set next_attempt_at = now() where event_id = $1', [waiting]);

    const leased = await lease(128, 8);
    expect(leased.map((d) => [d.endpoint_id, d.event_id])).toEqual([[quiet.id, waiting]]);
  });

  it('gives an endpoint whose receiver is failing one attempt in flight until one succeeds', async () => {
    await clear();
    const failing = await endpoint();
    const healthy = await endpoint();
    await pool.query("update endpoints set failing_since = now() - interval '1 hour' where id = $1", [
      failing.id,
    ]);
    const failingEvents = await schedule(failing, 5);
    await schedule(healthy, 5);

    const first = await lease(128, 8);
    expect(eventsOf(first, failing.id)).toEqual([failingEvents[0]]);
    expect(eventsOf(first, healthy.id)).toHaveLength(5);
    // Its probe in flight: nothing more for it.
    expect(await lease(128, 8)).toEqual([]);

    // It answered: its room is the cap again.
    await pool.query('update endpoints set failing_since = null where id = $1', [failing.id]);
    expect(eventsOf(await lease(128, 8), failing.id)).toEqual(failingEvents.slice(1).sort());
  });

  it("takes the earliest due deliveries up to each endpoint's room, and none not yet due", async () => {
    await clear();
    const a = await endpoint();
    const b = await endpoint();
    const aEvents = await schedule(a, 12);
    const bEvents = await schedule(b, 3);
    const later = await schedule(b, 1);
    await pool.query(
      "update deliveries set next_attempt_at = now() + interval '1 hour' where event_id = $1",
      [later[0]],
    );

    const first = await lease(128, 5);
    expect(eventsOf(first, a.id)).toEqual(aEvents.slice(0, 5).sort());
    expect(eventsOf(first, b.id)).toEqual(bEvents.sort());
    // a is at its cap, b has nothing due.
    expect(await lease(128, 5)).toEqual([]);
    expect(await lease(128, 6)).toEqual([
      expect.objectContaining({ endpoint_id: a.id, event_id: aEvents[5], workspace_id: a.workspaceId }),
    ]);
  });

  it('takes the oldest due first across endpoints, no more than asked, and hands them over oldest first', async () => {
    await clear();
    const a = await endpoint();
    const b = await endpoint();
    const aEvents = await schedule(a, 3);
    const bEvents = await schedule(b, 3);
    await pool.query(
      "update deliveries set next_attempt_at = next_attempt_at - interval '1 second' where event_id = any($1)",
      [bEvents],
    );
    expect((await lease(4, 8)).map((d) => d.event_id)).toEqual([...bEvents, aEvents[0]]);
  });

  it('gives a workspace no more than its room in this worker, however many of its endpoints have room', async () => {
    await clear();
    const busy = await endpoint();
    const others = await Promise.all([1, 2].map(() => endpoint({ workspaceId: busy.workspaceId })));
    expect(others).toHaveLength(2);
    // Five events, each a delivery to every one of the workspace's three endpoints.
    const backlog = await schedule(busy, 5);
    const newcomer = await endpoint();
    const due = await schedule(newcomer, 2);
    await pool.query(
      "update deliveries set next_attempt_at = now() - interval '1 minute' where event_id = any($1)",
      [due],
    );
    // Its cap is four and one of its attempts is in flight here: three of its fifteen.
    const leased = await store.lease(128, 8, leaseMs, gapWaitMs, {
      cap: 4,
      inFlight: new Map([[busy.workspaceId, 1]]),
    });
    const ofBusy = leased.filter((d) => d.workspace_id === busy.workspaceId);
    expect(ofBusy).toHaveLength(3);
    expect(ofBusy.every((d) => backlog.includes(d.event_id))).toBe(true);
    expect(eventsOf(leased, newcomer.id)).toEqual(due.sort());
    // Without a cap, every due one.
    await clear();
    await schedule(busy, 5);
    expect(await lease(128, 8)).toHaveLength(15);
  });

  it('finds the due deliveries among many endpoints whose retries are not yet due', async () => {
    await clear();
    const failing = await Promise.all(Array.from({ length: 300 }, () => endpoint()));
    const retries = (await Promise.all(failing.map((e) => schedule(e, 1)))).flat();
    await pool.query(
      "update deliveries set next_attempt_at = now() + interval '1 hour' where event_id = any($1)",
      [retries],
    );
    const healthy = await endpoint();
    const due = await schedule(healthy, 2);
    expect(eventsOf(await lease(128, 8))).toEqual(due.sort());
  });

  it("reads no more of a failing ordered endpoint's conversations than its room asks for, and nothing of a workspace at its cap", async () => {
    await clear();
    const failing = await endpoint({ ordered: true });
    await pool.query("update endpoints set failing_since = now() - interval '1 hour' where id = $1", [
      failing.id,
    ]);
    // A thousand conversations waiting on their retries, and one due.
    const events = await schedule(failing, 1_000, () => ({ key: randomUUID(), seq: 1 }));
    await pool.query(
      "update deliveries set next_attempt_at = now() + interval '1 hour' where event_id = any($1)",
      [events.slice(1)],
    );
    // Conversation heads the lease read: deliveries fetched through deliveries_in_order, counted by
    // this connection's statistics before and after it.
    const headsRead = async (perWorkspace?: Parameters<DeliveryStore['lease']>[4]) => {
      const client = await pool.connect();
      const count = async () => {
        const { rows } = await client.query<{ n: string }>(
          "select pg_stat_get_xact_tuples_fetched('deliveries_in_order'::regclass) as n",
        );
        return Number(rows[0]!.n);
      };
      try {
        await client.query('begin');
        const before = await count();
        await new DeliveryStore(client as unknown as Pool).lease(128, 8, leaseMs, gapWaitMs, perWorkspace);
        return (await count()) - before;
      } finally {
        await client.query('rollback');
        client.release();
      }
    };
    // Room for one attempt: sixteen heads at most, where it read 4 × 128.
    expect(await headsRead()).toBeLessThanOrEqual(16);
    // Its workspace at its cap in this worker: not even those.
    expect(await headsRead({ cap: 2, inFlight: new Map([[failing.workspaceId, 2]]) })).toBe(0);
  });

  it('never leases one delivery to two workers leasing at once', async () => {
    await clear();
    const targets = await Promise.all(Array.from({ length: 4 }, () => endpoint()));
    const all = (await Promise.all(targets.map((e) => schedule(e, 30)))).flat();
    const leases = await Promise.all(Array.from({ length: 6 }, () => lease(16, 8)));
    const leased = leases.flatMap((l) => l.map((d) => d.event_id));
    expect(leased.length).toBeGreaterThanOrEqual(16);
    expect(new Set(leased).size).toBe(leased.length);
    expect(leased.every((id) => all.includes(id))).toBe(true);
  });

  it("takes back other workspaces' expired leases, however many a disabled endpoint's are", async () => {
    await clear();
    const disabled = await endpoint();
    const stuck = await schedule(disabled, 5);
    const other = await endpoint();
    const [crashed] = await schedule(other, 1);
    expect(await lease(128, 8)).toHaveLength(6);
    // A worker died with all six under way; the disabled endpoint's leases ran out first.
    await pool.query(
      `update deliveries set lease_until = now() - case when event_id = any($1) then interval '1 hour'
         else interval '1 second' end where event_id = any($2)`,
      [stuck, [...stuck, crashed]],
    );
    await pool.query('update endpoints set enabled = false where id = $1', [disabled.id]);
    expect((await lease(3, 8)).map((d) => d.event_id)).toEqual([crashed]);
  });

  it("takes over a crashed worker's expired lease, within its endpoint's room", async () => {
    await clear();
    const a = await endpoint();
    const [crashed, waiting] = await schedule(a, 2);
    expect((await lease(1, 8)).map((d) => d.event_id)).toEqual([crashed]);
    await pool.query("update deliveries set lease_until = now() - interval '1 second' where event_id = $1", [
      crashed,
    ]);

    // Room for one: the expired lease counts as not in flight, and is the older of the two.
    const again = await lease(128, 1);
    expect(again.map((d) => [d.event_id, d.attempts])).toEqual([[crashed, 2]]);
    expect((await lease(128, 2)).map((d) => d.event_id)).toEqual([waiting]);
  });

  it('leases nothing of a disabled endpoint, nor a delivery whose workspace is not its endpoint’s', async () => {
    await clear();
    const off = await endpoint({ enabled: false });
    await schedule(off, 2);
    const a = await endpoint();
    const [foreign] = await schedule(a, 1);
    await pool.query('update deliveries set workspace_id = $2 where event_id = $1', [foreign, randomUUID()]);
    expect(await lease(128, 8)).toEqual([]);
  });

  it("holds an ordered endpoint's conversation behind its earlier delivery, and leases its other conversations however many wait", async () => {
    await clear();
    const a = await endpoint({ ordered: true });
    const held = randomUUID();
    const other = randomUUID();
    // Two hundred events of one conversation first, then one of another and one of no conversation.
    const heldEvents = await schedule(a, 200, (i) => ({ key: held, seq: i + 1 }));
    const [otherEvent] = await schedule(a, 1, () => ({ key: other, seq: 1 }));
    const [loose] = await schedule(a, 1);
    await pool.query('update deliveries set next_attempt_at = now() where event_id = any($1)', [
      [otherEvent, loose],
    ]);

    expect(eventsOf(await lease(128, 3))).toEqual([heldEvents[0], otherEvent, loose].sort());
    // All in flight: the rest of the first conversation waits behind its first.
    expect(await lease(128, 8)).toEqual([]);
  });

  it("leases an ordered conversation's deliveries at once after a gap it gave up, not each after the wait", async () => {
    await clear();
    const a = await endpoint({ ordered: true });
    const conversation = randomUUID();
    // Event 2 of the conversation never reaches the dispatcher (dead-lettered, say).
    const [first] = await schedule(a, 1, () => ({ key: conversation, seq: 1 }));
    const [third] = await schedule(a, 1, () => ({ key: conversation, seq: 3 }));
    await pool.query("update deliveries set status = 'delivered' where event_id = any($1)", [[first, third]]);
    await pool.query(
      `update ordering_progress set gap_since = now() - $2 * interval '1 millisecond' - interval '1 second'
        where ordering_key = $1`,
      [conversation, gapWaitMs],
    );
    // Every later event of it, fresh: none waits out the gap wait on its own.
    const later = await schedule(a, 3, (i) => ({ key: conversation, seq: i + 4 }));
    expect(eventsOf(await lease(128, 1))).toEqual([later[0]]);
  });
});
