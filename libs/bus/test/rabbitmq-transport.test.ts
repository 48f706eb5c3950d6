import { randomUUID } from 'node:crypto';
import { eventConsumers, eventLanes, type WireEvent } from '@inbox/contracts';
import { type LocalServer, startRabbitMQ, uniquePrefix, waitFor } from '@inbox/testkit';
import { connect } from 'amqplib';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { type Bus, connectBus, subscriptionsFor } from '../src/index.js';
import { bindingKey, RabbitNames } from '../src/rabbitmq-names.js';
import { deliveryLimit } from '../src/rabbitmq-topology.js';
import { RabbitBus } from '../src/rabbitmq-transport.js';
import { busContract } from './bus-contract.js';
import { consumeEveryWebhookLane, oneEventInEachLane } from './lanes.js';

busContract(
  'rabbitmq',
  async (replicas) => {
    const prefix = uniquePrefix();
    const buses: Bus[] = [];
    for (let i = 0; i < replicas; i++)
      buses.push(await RabbitBus.connect({ url: inject('infra').rabbitmqUrl, prefix }));
    return buses;
  },
  { kill: (bus) => (bus as RabbitBus).abort(), mayReturnAcknowledgedAtClose: true },
);

const event = (id = randomUUID()): WireEvent => ({
  id,
  type: 'message.sent',
  workspace_id: randomUUID(),
  occurred_at: new Date().toISOString(),
  data: { id },
});

const reply = {
  deliveries: [],
};

describe('rabbitmq transport', () => {
  const open: RabbitBus[] = [];
  const servers: LocalServer[] = [];
  const connectTo = async (url: string, prefix: string) => {
    const bus = await RabbitBus.connect({ url, prefix });
    open.push(bus);
    return bus;
  };
  afterEach(async () => {
    await Promise.all(open.splice(0).map((bus) => bus.abort().catch(() => undefined)));
    await Promise.all(servers.splice(0).map((server) => server.stop()));
  });

  it("binds a durable's NATS-style filter with the same meaning: `>` is one word or more", () => {
    expect(bindingKey('message.sent')).toBe('message.sent');
    expect(bindingKey('message.*')).toBe('message.*');
    expect(bindingKey('inbound.>')).toBe('inbound.*.#');
    expect(bindingKey('>')).toBe('*.#');
  });

  it('keeps an event published before its consumer ever started, for every consumer of the catalogue', async () => {
    const prefix = uniquePrefix();
    // Only the connector is up, on a broker where no consumer has run yet.
    const connector = await connectTo(inject('infra').rabbitmqUrl, prefix);
    // One event in each of the lanes messaging reads, each lane a queue of its own.
    const early = oneEventInEachLane('inbound.message');
    for (const e of early.values()) await connector.publish(e);
    const messaging = await connectTo(inject('infra').rabbitmqUrl, prefix);
    const seen: string[] = [];
    for (const lane of subscriptionsFor('messaging', eventConsumers.messaging)) {
      await messaging.consume(lane, async (e) => {
        seen.push(e.id);
      });
    }
    await waitFor(() => seen.length === eventLanes.count, {
      what: 'the events published before messaging started, in every lane',
    });
    expect(seen.sort()).toEqual([...early.values()].map((e) => e.id).sort());
  });

  it("drops the binding the dispatcher's lane 0 had before lanes when the dispatcher starts, not before", async () => {
    const url = inject('infra').rabbitmqUrl;
    const prefix = uniquePrefix();
    // A dispatcher of the release before lanes: its queue bound to every event (`>`).
    const before = await connectTo(url, prefix);
    const readBefore: string[] = [];
    await before.consume({ durable: 'webhook-dispatcher', filter: '>' }, async (e) => {
      readBefore.push(e.id);
    });
    // Another service of this release connects, and publishes in lanes: the old dispatcher, still the
    // only one, reads every lane's events.
    const bus = await connectTo(url, prefix);
    const early = oneEventInEachLane('message.sent');
    for (const e of early.values()) await bus.publish(e);
    await waitFor(() => readBefore.length === eventLanes.count, { what: 'every lane at the old dispatcher' });
    await before.abort();
    // This release's dispatcher starts: each lane's events reach its own lane's durable only.
    const { lanes, seen } = await consumeEveryWebhookLane(bus);
    const late = oneEventInEachLane('message.sent');
    for (const e of late.values()) await bus.publish(e);
    const lateIds = new Set([...late.values()].map((e) => e.id));
    const seenLate = () => [...seen.values()].flat().filter((id) => lateIds.has(id));
    await waitFor(() => seenLate().length >= eventLanes.count, { what: 'every lane’s event' });
    // Let a copy the old binding routed arrive, were there one.
    await new Promise((resolve) => setTimeout(resolve, 300));
    for (const [lane, e] of late)
      expect(seen.get(lanes[lane]!.durable)!.filter((id) => lateIds.has(id))).toEqual([e.id]);
  });

  it('is what connectBus opens for an amqp:// URL', async () => {
    const bus = await connectBus({ url: inject('infra').rabbitmqUrl, prefix: uniquePrefix() });
    open.push(bus as RabbitBus);
    expect(bus).toBeInstanceOf(RabbitBus);
    expect(bus.healthy()).toBe(true);
  });

  it('reports unhealthy while the broker is away, then reconnects and sets its handlers and consumers up again', async () => {
    const first = await startRabbitMQ();
    servers.push(first);
    const port = Number(new URL(first.url).port);
    const bus = await connectTo(first.url, uniquePrefix());
    await bus.handle('cmd.dispatcher.list-deliveries', async () => reply);
    const seen: string[] = [];
    await bus.consume({ durable: 'survivor', filter: '>' }, async (e) => {
      seen.push(e.id);
    });
    const heard: string[] = [];
    await bus.onNotice('notice.gateway.workspace-changed', ({ workspace_id }) => {
      heard.push(workspace_id);
    });
    expect(bus.healthy()).toBe(true);

    await first.stop();
    await waitFor(() => !bus.healthy(), { what: 'the bus to notice the outage' });
    await expect(bus.publish(event())).rejects.toMatchObject({ status: 503 });

    // A new, empty node where the old one was: everything the bus had declared must be declared again.
    servers.push(await startRabbitMQ({ port }));
    await waitFor(() => bus.healthy(), { what: 'the bus to reconnect', timeoutMs: 60_000 });
    const request = { workspace_id: randomUUID(), webhook_id: randomUUID() };
    await expect(bus.request('cmd.dispatcher.list-deliveries', request)).resolves.toEqual(reply);
    const after = event();
    await bus.publish(after);
    await waitFor(() => seen.includes(after.id), { what: 'an event consumed after the reconnect' });
    const workspace = randomUUID();
    await bus.notify('notice.gateway.workspace-changed', { workspace_id: workspace });
    await waitFor(() => heard.includes(workspace), { what: 'a notice heard after the reconnect' });
  }, 120_000);

  it('drops a command whose caller gave up while it waited in the queue, instead of handling it late', async () => {
    const url = inject('infra').rabbitmqUrl;
    const prefix = uniquePrefix();
    const bus = await connectTo(url, prefix);
    // The command's queue exists (declared as a handler would) but nobody takes from it yet.
    const raw = await connect(url);
    try {
      const channel = await raw.createChannel();
      await channel.assertQueue(new RabbitNames(prefix).commandQueue('cmd.dispatcher.list-deliveries'), {
        durable: false,
        autoDelete: true,
      });
      const late = { workspace_id: randomUUID(), webhook_id: randomUUID() };
      await expect(
        bus.request('cmd.dispatcher.list-deliveries', late, { timeoutMs: 200 }),
      ).rejects.toMatchObject({ status: 504 });
      const handled: string[] = [];
      await bus.handle('cmd.dispatcher.list-deliveries', async ({ workspace_id }) => {
        handled.push(workspace_id);
        return reply;
      });
      const next = { workspace_id: randomUUID(), webhook_id: randomUUID() };
      await expect(bus.request('cmd.dispatcher.list-deliveries', next)).resolves.toEqual(reply);
      // The queue is first in, first out: the late command, ahead of the next one, was dropped, not handled.
      expect(handled).toEqual([next.workspace_id]);
    } finally {
      await raw.close();
    }
  });

  it('drops a command that reached the queue after its caller gave up, though the broker has not expired it yet', async () => {
    const url = inject('infra').rabbitmqUrl;
    const prefix = uniquePrefix();
    const bus = await connectTo(url, prefix);
    const handled: string[] = [];
    await bus.handle('cmd.dispatcher.list-deliveries', async ({ workspace_id }) => {
      handled.push(workspace_id);
      return reply;
    });
    // A caller's message enqueued late (a slow publish): the broker's expiration counts from the enqueue,
    // so it is still alive, but the caller's deadline, by the caller's clock, has passed.
    const raw = await connect(url);
    try {
      const channel = await raw.createChannel();
      const late = { workspace_id: randomUUID(), webhook_id: randomUUID() };
      channel.sendToQueue(
        new RabbitNames(prefix).commandQueue('cmd.dispatcher.list-deliveries'),
        Buffer.from(JSON.stringify(late)),
        { expiration: '60000', headers: { 'x-inbox-deadline': Date.now() - 1 } },
      );
      const next = { workspace_id: randomUUID(), webhook_id: randomUUID() };
      await expect(bus.request('cmd.dispatcher.list-deliveries', next)).resolves.toEqual(reply);
      expect(handled).toEqual([next.workspace_id]);
    } finally {
      await raw.close();
    }
  });

  it('dead-letters an event whose consumers keep dying while they handle it, at the delivery limit', async () => {
    const url = inject('infra').rabbitmqUrl;
    const prefix = uniquePrefix();
    const publisher = await connectTo(url, prefix);
    const poison = event();
    let handedOut = 0;
    // Each replica takes the event and dies with it unacknowledged, as a process killed by it would.
    const takeAndDie = async () => {
      const replica = await connectTo(url, prefix);
      await replica.consume({ durable: 'pill', filter: '>' }, async () => {
        handedOut++;
        void replica.abort();
        await new Promise(() => undefined);
      });
    };
    await takeAndDie();
    await publisher.publish(poison);
    for (let taken = 1; taken <= deliveryLimit; taken++) {
      await waitFor(() => handedOut === taken, { what: `delivery ${taken}` });
      await takeAndDie();
    }
    const letters = await waitFor(
      async () => {
        const found = await publisher.deadLetters('pill');
        return found.length > 0 ? found : undefined;
      },
      { what: 'the poison event among the dead letters' },
    );
    expect(handedOut).toBe(deliveryLimit + 1);
    expect(letters).toEqual([
      {
        durable: 'pill',
        event: poison,
        error: expect.stringContaining('without an answer'),
        attempts: deliveryLimit + 1,
      },
    ]);
    expect(await publisher.pending('pill')).toBe(0);
  });

  it('dead-letters a message that is no event as it came, without handing it to the handler', async () => {
    const url = inject('infra').rabbitmqUrl;
    const prefix = uniquePrefix();
    const bus = await connectTo(url, prefix);
    const handled: string[] = [];
    await bus.consume({ durable: 'strict', filter: '>' }, async (e) => {
      handled.push(e.id);
    });
    // Another client puts bytes that are not an event on the exchange.
    const raw = await connect(url);
    try {
      const channel = await raw.createConfirmChannel();
      channel.publish(new RabbitNames(prefix).eventsExchange, 'message.sent', Buffer.from('not json'));
      await channel.waitForConfirms();
    } finally {
      await raw.close();
    }
    const letters = await waitFor(
      async () => {
        const found = await bus.deadLetters('strict');
        return found.length > 0 ? found : undefined;
      },
      { what: 'the unreadable message among the dead letters' },
    );
    expect(letters).toEqual([
      { durable: 'strict', event: { raw: 'not json' }, error: expect.any(String), attempts: 1 },
    ]);
    expect(handled).toEqual([]);
  });

  it('answers 503 at once while disconnected, and closes for good on drain', async () => {
    const bus = await connectTo(inject('infra').rabbitmqUrl, uniquePrefix());
    await bus.drain();
    expect(bus.healthy()).toBe(false);
    await expect(
      bus.request('cmd.dispatcher.list-deliveries', { workspace_id: randomUUID(), webhook_id: randomUUID() }),
    ).rejects.toMatchObject({ status: 503 });
  });
});
