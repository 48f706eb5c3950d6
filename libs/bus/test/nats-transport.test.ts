import { randomUUID } from 'node:crypto';
import { eventLanes, laneOf, type WireEvent } from '@inbox/contracts';
import { startNats, uniquePrefix, waitFor } from '@inbox/testkit';
import { AckPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { describe, expect, inject, it, onTestFinished } from 'vitest';
import { type Bus, consumeEvents, NatsBus } from '../src/index.js';
import { SubjectNames } from '../src/subjects.js';
import { busContract } from './bus-contract.js';
import { consumeEveryWebhookLane, oneEventInEachLane } from './lanes.js';

busContract(
  'nats',
  async (replicas) => {
    const prefix = uniquePrefix();
    const buses: Bus[] = [];
    for (let i = 0; i < replicas; i++)
      buses.push(await NatsBus.connect({ url: inject('infra').natsUrl, prefix }));
    return buses;
  },
  { kill: (bus) => (bus as NatsBus).abort() },
);

describe('nats transport de-duplication', () => {
  it('drops a second publish of the same event id within the stream window', async () => {
    const bus = await NatsBus.connect({ url: inject('infra').natsUrl, prefix: uniquePrefix() });
    try {
      const seen: string[] = [];
      await bus.consume({ durable: 'dedup', filter: '>' }, async (e) => {
        seen.push(e.id);
      });
      const event = (id = randomUUID()): WireEvent => ({
        id,
        type: 'message.sent',
        workspace_id: randomUUID(),
        occurred_at: new Date().toISOString(),
        data: {},
      });
      const first = event();
      await bus.publish(first);
      await bus.publish(first);
      const marker = event();
      await bus.publish(marker);
      await waitFor(() => seen.includes(marker.id), { what: 'the marker' });
      expect(seen).toEqual([first.id, marker.id]);
    } finally {
      await bus.drain();
    }
  });
});

describe('nats transport inbound lanes', () => {
  it('reads in lane 0 an inbound event published on the subject of before lanes, whatever its workspace', async () => {
    const prefix = uniquePrefix();
    const bus = await NatsBus.connect({ url: inject('infra').natsUrl, prefix });
    const nc = await connect({ servers: inject('infra').natsUrl });
    try {
      const handled: string[] = [];
      await consumeEvents(
        bus,
        { durable: 'messaging' },
        {
          'inbound.message': async () => undefined,
          'inbound.status': async (e) => {
            handled.push(e.id);
          },
        },
      );
      let workspaceId = randomUUID();
      while (laneOf(workspaceId) === 0) workspaceId = randomUUID();
      const data = {
        workspace_id: workspaceId,
        integration_id: randomUUID(),
        provider_message_id: 'wamid.before-lanes',
        status: 'delivered',
        error: null,
      };
      const before: WireEvent = {
        id: randomUUID(),
        type: 'inbound.status',
        workspace_id: workspaceId,
        occurred_at: new Date().toISOString(),
        data,
      };
      // As a connector of the release before lanes published it, still in the stream at the upgrade.
      await jetstream(nc).publish(new SubjectNames(prefix).event('inbound.status'), JSON.stringify(before));
      await waitFor(() => handled.includes(before.id), { what: 'the event of before lanes' });
    } finally {
      await nc.close();
      await bus.drain();
    }
  });
});

describe('nats transport unacknowledged events', () => {
  it('goes on delivering past a thousand events waiting out their redelivery delay', async () => {
    const bus = await NatsBus.connect({ url: inject('infra').natsUrl, prefix: uniquePrefix() });
    try {
      let failed = 0;
      const handled: string[] = [];
      // Each failing event waits a minute before its next delivery, unacknowledged all that time.
      await bus.consume(
        { durable: 'patient', filter: '>', maxDeliver: 5, redeliveryDelaysMs: [60_000] },
        async (e) => {
          if (e.type === 'message.failed') {
            failed++;
            throw new Error('fails on every delivery');
          }
          handled.push(e.id);
        },
      );
      const event = (type: string): WireEvent => ({
        id: randomUUID(),
        type,
        workspace_id: randomUUID(),
        occurred_at: new Date().toISOString(),
        data: {},
      });
      for (let i = 0; i < 1_050; i++) await bus.publish(event('message.failed'));
      const after = event('message.sent');
      await bus.publish(after);
      await waitFor(() => handled.includes(after.id), {
        what: 'the event after a thousand failing ones',
        timeoutMs: 20_000,
      });
      expect(failed).toBe(1_050);
    } finally {
      await bus.drain();
    }
  });
});

describe('nats transport durables made before', () => {
  it("raises a durable's allowance of unacknowledged events when it finds it at the server's default", async () => {
    const prefix = uniquePrefix();
    const names = new SubjectNames(prefix);
    const first = await NatsBus.connect({ url: inject('infra').natsUrl, prefix });
    const nc = await connect({ servers: inject('infra').natsUrl });
    onTestFinished(() => nc.close());
    const jsm = await jetstreamManager(nc);
    // As every durable deployed before it was set: no max_ack_pending, so the server's 1,000.
    await jsm.consumers.add(names.eventsStream, {
      durable_name: names.durable('older'),
      ack_policy: AckPolicy.Explicit,
      filter_subject: names.event('>'),
    });
    expect(
      (await jsm.consumers.info(names.eventsStream, names.durable('older'))).config.max_ack_pending,
    ).toBe(1_000);
    await first.consume({ durable: 'older', filter: '>' }, async () => undefined);
    expect(
      (await jsm.consumers.info(names.eventsStream, names.durable('older'))).config.max_ack_pending,
    ).toBe(20_000);
    await first.drain();
  });
});

describe('nats transport durables that take over', () => {
  it('starts a new durable given startBackMs that far back, not at the oldest event the stream keeps', async () => {
    const bus = await NatsBus.connect({ url: inject('infra').natsUrl, prefix: uniquePrefix() });
    try {
      const event = (): WireEvent => ({
        id: randomUUID(),
        type: 'lead.moved',
        workspace_id: randomUUID(),
        occurred_at: new Date().toISOString(),
        data: {},
      });
      const old = event();
      await bus.publish(old);
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      const fresh = event();
      await bus.publish(fresh);
      const takingOver: string[] = [];
      const fromTheStart: string[] = [];
      await bus.consume({ durable: 'taking-over', filter: '>', startBackMs: 500 }, async (e) => {
        takingOver.push(e.id);
      });
      await bus.consume({ durable: 'from-the-start', filter: '>' }, async (e) => {
        fromTheStart.push(e.id);
      });
      await waitFor(() => takingOver.length === 1 && fromTheStart.length === 2, { what: 'both durables' });
      expect(takingOver).toEqual([fresh.id]);
      expect(fromTheStart).toEqual([old.id, fresh.id]);
    } finally {
      await bus.drain();
    }
  });
});

describe('nats transport webhook lanes over a durable of before them', () => {
  it("narrows lane 0's filter on the durable that took every event, and leaves the other lanes' events to them", async () => {
    const prefix = uniquePrefix();
    const bus = await NatsBus.connect({ url: inject('infra').natsUrl, prefix });
    try {
      // The dispatcher of the release before lanes: one durable on every event.
      await bus.consume({ durable: 'webhook-dispatcher', filter: '>' }, async () => undefined);
      await bus.drain();
    } catch (error) {
      await bus.drain().catch(() => undefined);
      throw error;
    }
    const next = await NatsBus.connect({ url: inject('infra').natsUrl, prefix });
    try {
      const { lanes, seen } = await consumeEveryWebhookLane(next);
      const byLane = oneEventInEachLane('message.sent');
      for (const e of byLane.values()) await next.publish(e);
      await waitFor(() => [...seen.values()].flat().length >= eventLanes.count, {
        what: 'every lane’s event',
      });
      await new Promise((resolve) => setTimeout(resolve, 300));
      for (const [lane, e] of byLane) expect(seen.get(lanes[lane]!.durable)).toEqual([e.id]);
    } finally {
      await next.drain();
    }
  });
});

describe('nats transport health', () => {
  it('reports unhealthy while the server is away, so readiness follows an outage', async () => {
    const server = await startNats();
    const bus = await NatsBus.connect({ url: server.url, prefix: uniquePrefix() });
    expect(bus.healthy()).toBe(true);
    await server.stop();
    await waitFor(() => !bus.healthy(), { what: 'the bus to notice the outage' });
    await bus.drain().catch(() => undefined);
  });
});

describe('nats transport replies', () => {
  it('answers a reply too large for the server with a 500 at once, instead of leaving the caller to time out', async () => {
    const prefix = uniquePrefix();
    const bus = await NatsBus.connect({ url: inject('infra').natsUrl, prefix });
    try {
      await bus.handle('cmd.messaging.get-contact', async () => ({
        id: '00000000-0000-4000-8000-000000000000',
        phone: '+5511999990000',
        name: 'x'.repeat(2 * 1024 * 1024),
        created_at: new Date().toISOString(),
      }));
      await expect(
        bus.request(
          'cmd.messaging.get-contact',
          {
            workspace_id: '00000000-0000-4000-8000-000000000001',
            contact_id: '00000000-0000-4000-8000-000000000002',
          },
          { timeoutMs: 5_000 },
        ),
        // A dropped reply would surface as the caller's 504 timeout.
      ).rejects.toMatchObject({ status: 500 });
    } finally {
      await bus.drain();
    }
  });
});

describe('nats transport start', () => {
  it('connects replicas that start together on a server without its streams', async () => {
    const nc = await connect({ servers: inject('infra').natsUrl });
    const jsm = await jetstreamManager(nc);
    onTestFinished(() => nc.close());
    // Each creates the streams it does not find; one finds another's stream mid-creation and the server
    // refuses its own add (`subjects overlap with an existing stream`).
    for (let round = 0; round < 150; round++) {
      const prefix = uniquePrefix();
      const started = await Promise.allSettled(
        Array.from({ length: 12 }, () => NatsBus.connect({ url: inject('infra').natsUrl, prefix })),
      );
      const buses = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
      await Promise.all(buses.map((bus) => bus.drain()));
      const names = new SubjectNames(prefix);
      for (const stream of [names.eventsStream, names.deadLetterStream])
        await jsm.streams.delete(stream).catch(() => undefined);
      expect(started.filter((s) => s.status === 'rejected')).toEqual([]);
    }
  });
});
