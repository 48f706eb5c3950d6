import { randomUUID } from 'node:crypto';
import {
  type EventData,
  type EventType,
  eventConsumers,
  eventLanes,
  eventRoute,
  eventTypes,
  type InboundStatusEvent,
  laneOf,
  laneWord,
  publicEventTypes,
  type WireEvent,
} from '@inbox/contracts';
import { waitFor } from '@inbox/testkit';
import { describe, expect, expectTypeOf, it } from 'vitest';
import {
  consumeEvents,
  filterFor,
  forwardEvents,
  InProcessBus,
  subjectMatches,
  subscriptionsFor,
} from '../src/index.js';

const workspace = randomUUID();
const wire = (type: string, data: unknown): WireEvent => ({
  id: randomUUID(),
  type,
  workspace_id: workspace,
  occurred_at: new Date().toISOString(),
  data,
});
const status: InboundStatusEvent = {
  workspace_id: workspace,
  integration_id: randomUUID(),
  provider_message_id: 'wamid.1',
  status: 'delivered',
  error: null,
};

describe('filterFor', () => {
  it('gives each service the filter its durable has always had', () => {
    // The durables' filter subjects on the EVENTS stream (deploy/test/nats-permissions.test.ts uses them).
    expect(filterFor([eventTypes.inboundMessage, eventTypes.inboundStatus])).toBe('inbound.>');
    expect(filterFor([eventTypes.leadMoved])).toBe('lead.moved');
    expect(filterFor(publicEventTypes)).toBe('>');
    expect(filterFor(eventConsumers.messaging)).toBe('inbound.>');
  });

  it('keeps `>` from standing for no token at all', () => {
    expect(filterFor(['a.b', 'a.b.c'] as unknown as EventType[])).toBe('a.>');
    expect(filterFor(['a.b.c', 'a.b.d'] as unknown as EventType[])).toBe('a.b.>');
    expect(() => filterFor([])).toThrow();
  });
});

describe('subscriptionsFor', () => {
  it('leaves the callbacks the connector kept on the bus to its own durable: no other consumer is sent them', () => {
    const route = eventRoute({ type: eventTypes.callbackKept, workspace_id: randomUUID() });
    const takers = Object.entries(eventConsumers).flatMap(([durable, types]) =>
      subscriptionsFor(durable, types)
        .filter((lane) => subjectMatches(lane.filter, route))
        .map((lane) => lane.durable),
    );
    // A two-word type would also match the webhook dispatcher's lane 0 (`*.*`), which would read every
    // kept callback, up to 256 KiB each, only to drop it.
    expect(takers).toEqual(['connector-kept']);
  });

  it('gives types outside the lanes one durable, and the lanes’ types a durable per lane', () => {
    expect(subscriptionsFor('messaging-leads', eventConsumers['messaging-leads'])).toEqual([
      { durable: 'messaging-leads', filter: 'lead.moved' },
    ]);
    const lanes = subscriptionsFor('messaging', eventConsumers.messaging);
    expect(lanes).toHaveLength(eventLanes.count);
    // Lane 0 keeps the durable and filter of before lanes, so it reads what was published then.
    expect(lanes[0]).toEqual({ durable: 'messaging', filter: 'inbound.>' });
    expect(lanes[3]).toEqual({ durable: 'messaging-lane3', filter: 'lane3.inbound.>' });
    expect(() => subscriptionsFor('mixed', [eventTypes.inboundStatus, eventTypes.leadMoved])).toThrow(
      /lanes/,
    );
  });

  it("gives the webhook events' lane 0 a filter that leaves the other lanes out, and drops the one it had", () => {
    const lanes = subscriptionsFor('webhook-dispatcher', publicEventTypes);
    expect(lanes).toHaveLength(eventLanes.count);
    // The webhook events share no first word: `>` would take lane 3's too.
    expect(lanes[0]).toEqual({ durable: 'webhook-dispatcher', filter: '*.*', formerFilter: '>' });
    // A lane the durable read until now starts a little back on its first start, not a week back.
    expect(lanes[3]).toEqual({
      durable: 'webhook-dispatcher-lane3',
      filter: 'lane3.>',
      startBackMs: 15 * 60_000,
    });
    for (const type of publicEventTypes) {
      const workspaces = Array.from({ length: 200 }, () => randomUUID());
      for (const workspaceId of workspaces) {
        const route = eventRoute({ type, workspace_id: workspaceId });
        const takers = lanes.filter((lane) => subjectMatches(lane.filter, route));
        // Each event is taken by its own lane's durable, and by no other.
        expect(takers.map((lane) => lane.durable)).toEqual([lanes[laneOf(workspaceId)]!.durable]);
      }
    }
  });

  it('routes a workspace’s events always to its one lane, and spreads workspaces over every lane', () => {
    const event = (type: string, workspace_id: string) => ({ type, workspace_id });
    const lanesUsed = new Map<number, number>();
    for (let i = 0; i < 800; i++) {
      const id = randomUUID();
      const route = eventRoute(event(eventTypes.inboundMessage, id));
      const lane = laneOf(id);
      expect(route).toBe(lane === 0 ? 'inbound.message' : `lane${lane}.inbound.message`);
      expect(eventRoute(event(eventTypes.inboundStatus, id))).toBe(`${laneWord(lane)}inbound.status`);
      expect(eventRoute(event(eventTypes.messageSent, id))).toBe(`${laneWord(lane)}message.sent`);
      // Only the lanes' types take a lane.
      expect(eventRoute(event(eventTypes.leadMoved, id))).toBe('lead.moved');
      lanesUsed.set(lane, (lanesUsed.get(lane) ?? 0) + 1);
    }
    expect([...lanesUsed.keys()].sort()).toEqual(Array.from({ length: eventLanes.count }, (_, lane) => lane));
    for (const count of lanesUsed.values()) expect(count).toBeGreaterThan(40);
    // Pinned: a release that hashed otherwise would move workspaces to other lanes while older
    // processes still publish to the lanes of before.
    expect(laneOf('8a7f1c2e-0000-4000-8000-000000000000')).toBe(6);
    expect(laneOf('ffffffff-ffff-4fff-bfff-ffffffffffff')).toBe(3);
  });
});

describe('consumeEvents', () => {
  it('hands each handler its type’s data parsed by the catalogue, and leaves other types unread', async () => {
    const bus = new InProcessBus();
    const statuses: InboundStatusEvent[] = [];
    const messages: unknown[] = [];
    await consumeEvents(
      bus,
      { durable: 'typed', maxDeliver: 1 },
      {
        [eventTypes.inboundStatus]: async (event, delivery) => {
          expectTypeOf(event.type).toEqualTypeOf<'inbound.status'>();
          expectTypeOf(event.data).toEqualTypeOf<EventData<'inbound.status'>>();
          expect(delivery.attempt).toBe(1);
          statuses.push(event.data);
        },
        [eventTypes.inboundMessage]: async (event) => {
          messages.push(event.data);
        },
      },
    );
    // Through the filter but taken by no handler (a newer version's event): acknowledged unread.
    await bus.publish(wire('inbound.reaction', { anything: true }));
    // Outside the filter.
    await bus.publish(wire(eventTypes.leadMoved, {}));
    // Wrongly shaped: refused before any handler runs, so it ends in the dead letters.
    const malformed = wire(eventTypes.inboundStatus, { ...status, status: 'seen' });
    await bus.publish(malformed);
    const good = wire(eventTypes.inboundStatus, { ...status, extra: 'dropped by the schema' });
    await bus.publish(good);
    await waitFor(() => statuses.length === 1, { what: 'the well-formed status' });
    expect(statuses).toEqual([status]);
    expect(messages).toEqual([]);
    const { durable } = subscriptionsFor('typed', [eventTypes.inboundStatus])[laneOf(workspace)]!;
    const letters = await bus.deadLetters(durable);
    expect(letters.map((letter) => letter.event.id)).toEqual([malformed.id]);
    expect(letters[0]!.error).toMatch(/status/);
    await bus.drain();
  });

  it('refuses, at compile time, a handler for an event outside the catalogue or of another event’s data', () => {
    const bus = new InProcessBus();
    // Checked by tsc: never run.
    const refused = () => [
      // @ts-expect-error: not an event of the catalogue
      consumeEvents(bus, { durable: 'x' }, { 'thing.made': async () => undefined }),
      consumeEvents(
        bus,
        { durable: 'x' },
        {
          // @ts-expect-error: a lead move's handler given an inbound status
          [eventTypes.leadMoved]: async (event: { data: InboundStatusEvent }) => void event,
        },
      ),
    ];
    expect(refused).toBeTypeOf('function');
  });
});

describe('consumeEvents across lanes', () => {
  it('runs no more handlers over all the lanes than concurrencyAcrossLanes, each lane within its own', async () => {
    const bus = new InProcessBus();
    let running = 0;
    let most = 0;
    let open: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    const handled: string[] = [];
    await consumeEvents(
      bus,
      { durable: 'shared', concurrency: 2, concurrencyAcrossLanes: 3 },
      {
        [eventTypes.inboundStatus]: async (event) => {
          running++;
          most = Math.max(most, running);
          await gate;
          running--;
          handled.push(event.id);
        },
        [eventTypes.inboundMessage]: async () => undefined,
      },
    );
    // Two events in each of four lanes: eight that could run at once, lane by lane.
    const lanes = new Map<number, string>();
    while (lanes.size < 4) {
      const id = randomUUID();
      lanes.set(laneOf(id), id);
    }
    for (const workspaceId of lanes.values())
      for (let i = 0; i < 2; i++)
        await bus.publish({
          ...wire(eventTypes.inboundStatus, { ...status, workspace_id: workspaceId }),
          workspace_id: workspaceId,
        });
    await waitFor(() => running === 3, { what: 'three handlers running' });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(most).toBe(3);
    open();
    await waitFor(() => handled.length === 8, { what: 'every event, once let through' });
    expect(most).toBe(3);
    await bus.drain();
  });
});

describe('forwardEvents', () => {
  it('passes the given types on with their data exactly as it came, and skips the rest', async () => {
    const bus = new InProcessBus();
    const forwarded: string[] = [];
    await forwardEvents(bus, { durable: 'dispatcher' }, publicEventTypes, async (event) => {
      expectTypeOf(event.type).toEqualTypeOf<(typeof publicEventTypes)[number]>();
      expectTypeOf(event.data).toBeUnknown();
      forwarded.push(JSON.stringify(event.data));
    });
    await bus.publish(wire(eventTypes.inboundStatus, status));
    const data = { workspace_id: workspace, event: 'message.sent', n: 1 };
    await bus.publish(wire(eventTypes.messageSent, data));
    await waitFor(() => forwarded.length === 1, { what: 'the public event' });
    expect(forwarded).toEqual([JSON.stringify(data)]);
    expect(await bus.deadLetters('dispatcher')).toEqual([]);
    await bus.drain();
  });
});
