// The NATS users of deploy/nats/nats-server.conf, the file compose and the dev Kubernetes overlay run,
// on a real nats-server: each service, connected through the real NatsBus as its own user, can do what
// its role needs (a command round trip, events through JetStream durables) and nothing past it.
import { randomBytes, randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { type Bus, NatsBus, subscriptionsFor } from '@inbox/bus';
import { eventConsumers, eventLanes, laneOf, type WireEvent } from '@inbox/contracts';
import { type LocalServer, startNatsWithConfig, waitFor } from '@inbox/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { root } from './support.js';

const USERS = ['gateway', 'messaging', 'provider-connector', 'pipeline', 'webhook-dispatcher'] as const;
type User = (typeof USERS)[number];
// Not a service: whoever runs the dead-letters CLI.
const OPERATOR = 'operator';

/** The variable the config reads each user's password from: NATS_<USER>_PASSWORD. */
const passwordVariable = (user: string) => `NATS_${user.toUpperCase().replaceAll('-', '_')}_PASSWORD`;
// Shaped as deploy/nats/nats-server.conf asks: a letter, then hex.
const passwords = Object.fromEntries(
  [...USERS, OPERATOR].map((user) => [user, `p${randomBytes(16).toString('hex')}`]),
);

let server: LocalServer;
const buses = {} as Record<User, Bus>;
const port = () => new URL(server.url).port;
const urlFor = (user: string, password: string) => `nats://${user}:${password}@127.0.0.1:${port()}`;

beforeAll(async () => {
  server = await startNatsWithConfig(
    join(root, 'deploy/nats/nats-server.conf'),
    Object.fromEntries([...USERS, OPERATOR].map((user) => [passwordVariable(user), passwords[user]!])),
  );
  for (const user of USERS) {
    buses[user] = await NatsBus.connect({ url: urlFor(user, passwords[user]!), name: user });
  }
});

afterAll(async () => {
  await Promise.all(Object.values(buses).map((bus) => bus.drain()));
  await server?.stop();
});

const workspaceId = randomUUID();
let connectorSends = 0;
const event = (type: string, workspace = workspaceId): WireEvent => ({
  id: randomUUID(),
  type,
  workspace_id: workspace,
  occurred_at: new Date().toISOString(),
  data: {},
});

/** Events one durable received, by id. */
function collect(bus: Bus, durable: string, filter: string, seen = new Set<string>()): Set<string> {
  void bus.consume({ durable, filter }, async (received) => {
    seen.add(received.id);
  });
  return seen;
}

describe('NATS users and permissions (deploy/nats/nats-server.conf)', () => {
  it('carries commands from each caller to the owner that answers them', async () => {
    // Each handler answers with what it was asked, so a reply proves the round trip and nothing else.
    await buses.messaging.handle(
      'cmd.messaging.send-message',
      async ({ message }) => ({ answered: message }) as never,
    );
    await buses.messaging.handle(
      'cmd.messaging.get-contact',
      async ({ contact_id }) => ({ answered: contact_id }) as never,
    );
    await buses['provider-connector'].handle('cmd.connector.send-text', async ({ message_id }) => {
      connectorSends++;
      return { provider_message_id: message_id, sent_at: new Date().toISOString() };
    });

    const fromGateway = await buses.gateway.request('cmd.messaging.send-message', {
      channel: 'alt-a',
      phone: '+5511988880001',
      message: 'oi',
      workspace: { id: workspaceId, default_country_code: '55' },
    });
    expect(fromGateway).toEqual({ answered: 'oi' });
    const contactId = randomUUID();
    const fromPipeline = await buses.pipeline.request('cmd.messaging.get-contact', {
      workspace_id: workspaceId,
      contact_id: contactId,
    });
    expect(fromPipeline).toEqual({ answered: contactId });
    const messageId = randomUUID();
    const fromMessaging = await buses.messaging.request('cmd.connector.send-text', {
      workspace_id: workspaceId,
      integration_id: randomUUID(),
      message_id: messageId,
      to: '+5511988880001',
      text: 'oi',
    });
    expect(fromMessaging.provider_message_id).toBe(messageId);
  });

  it('lets a handler that works for seconds send its caller signs of life before its answer', async () => {
    await buses.messaging.handle('cmd.messaging.get-conversation', async ({ conversation_id }) => {
      await new Promise((resolve) => setTimeout(resolve, 4_000));
      return { answered: conversation_id } as never;
    });
    const conversationId = randomUUID();
    // Four seconds of work against 2.5 s of allowed silence: the answer arrives only if the server lets
    // the handler send more than one message to the reply subject.
    const answer = await buses.gateway.request(
      'cmd.messaging.get-conversation',
      { workspace_id: workspaceId, conversation_id: conversationId },
      { silenceMs: 2_500 },
    );
    expect(answer).toEqual({ answered: conversationId });
  });

  it("lets the operator list a durable's dead letters and put them back, which no service may", async () => {
    // Before any other consumer of messaging-leads here: a replica of messaging of its own whose
    // handler gives up on the first delivery, as one with a bug would.
    const failing = await NatsBus.connect({
      url: urlFor('messaging', passwords.messaging!),
      name: 'messaging',
    });
    const moved = event('lead.moved');
    try {
      await failing.consume({ durable: 'messaging-leads', filter: 'lead.moved', maxDeliver: 1 }, async () => {
        throw new Error('a bug, since mended');
      });
      await buses.pipeline.publish(moved);
      // A service cannot read the dead letters, even its own durable's.
      await expect(buses.messaging.deadLetters('messaging-leads')).rejects.toThrow(/permission/i);
    } finally {
      await failing.drain();
    }
    const operator = await NatsBus.connect({ url: urlFor(OPERATOR, passwords[OPERATOR]!), name: OPERATOR });
    try {
      const letters = await waitFor(
        async () => {
          const found = await operator.deadLetters('messaging-leads');
          return found.length > 0 ? found : undefined;
        },
        { what: 'the dead letter' },
      );
      expect(letters.map((letter) => (letter.event as WireEvent).id)).toEqual([moved.id]);
      expect(await operator.redrive('messaging-leads')).toBe(1);
      expect(await operator.deadLetters('messaging-leads')).toEqual([]);
    } finally {
      await operator.drain();
    }
  });

  it('lets each emitter publish its events and each consumer read them through its own durable', async () => {
    // The services' own durables and filters (services/messaging and services/webhook-dispatcher).
    // Inbound events travel in lanes by workspace, a durable each: one event from the connector in each.
    const inbound = new Set<string>();
    for (const lane of subscriptionsFor('messaging', eventConsumers.messaging))
      collect(buses.messaging, lane.durable, lane.filter, inbound);
    const leads = collect(buses.messaging, 'messaging-leads', 'lead.moved');
    // The callbacks the connector kept on the bus while Postgres refused them, read back by itself.
    const keptOnBus = collect(buses['provider-connector'], 'connector-kept', 'connector.callback.kept');
    // So do the webhook events, one durable of the dispatcher's each.
    const webhooks = new Set<string>();
    const dispatcherLanes = subscriptionsFor('webhook-dispatcher', eventConsumers['webhook-dispatcher']);
    for (const lane of dispatcherLanes)
      collect(buses['webhook-dispatcher'], lane.durable, lane.filter, webhooks);

    const inLanes = (type: string) => {
      const lanes = new Map<number, WireEvent>();
      while (lanes.size < eventLanes.count) {
        const workspace = randomUUID();
        lanes.set(laneOf(workspace), event(type, workspace));
      }
      return [...lanes.values()];
    };
    const fromConnector = inLanes('inbound.message');
    const fromPipeline = event('lead.moved');
    const keptCallback = event('connector.callback.kept');
    const fromMessaging = [...inLanes('message.sent'), ...inLanes('conversation.assigned')];
    for (const inboundEvent of fromConnector) await buses['provider-connector'].publish(inboundEvent);
    await buses.pipeline.publish(fromPipeline);
    await buses['provider-connector'].publish(keptCallback);
    for (const webhookEvent of fromMessaging) await buses.messaging.publish(webhookEvent);

    await waitFor(
      () =>
        fromConnector.every((e) => inbound.has(e.id)) &&
        leads.has(fromPipeline.id) &&
        keptOnBus.has(keptCallback.id) &&
        fromMessaging.every((e) => webhooks.has(e.id)),
      { what: 'every event at its consumers', timeoutMs: 10_000 },
    );
    for (const lane of dispatcherLanes)
      expect(await buses['webhook-dispatcher'].pending(lane.durable)).toBe(0);
  });

  it('refuses a connection without credentials or with another user’s password', async () => {
    await expect(NatsBus.connect({ url: server.url })).rejects.toThrow(/authorization/i);
    await expect(NatsBus.connect({ url: urlFor('gateway', passwords.messaging!) })).rejects.toThrow(
      /authorization/i,
    );
  });

  it('keeps the gateway from answering commands or emitting events', async () => {
    // A connection of its own: the server closes the refused subscription, which its drain then reports.
    const gateway = await NatsBus.connect({ url: urlFor('gateway', passwords.gateway!), name: 'gateway' });
    let stolen = 0;
    await gateway.handle('cmd.messaging.assign', async () => {
      stolen++;
      return {} as never;
    });
    // Nobody else answers cmd.messaging.assign here: the gateway may send it, and with the subscription
    // refused the server finds no responder at all.
    const refused = await buses.gateway
      .request(
        'cmd.messaging.assign',
        { workspace_id: workspaceId, conversation_id: randomUUID(), type: null, id: null } as never,
        { timeoutMs: 2_000 },
      )
      .catch((error: unknown) => error);
    expect(refused).toMatchObject({ status: 503 });
    expect(String((refused as Error).cause)).toMatch(/no responders/i);
    expect(stolen).toBe(0);

    // On its workspace's lane, or on the type's own subject in lane 0.
    await expect(gateway.publish(event('message.sent'))).rejects.toThrow(
      /Permissions Violation for Publish to "evt\.(lane\d\.)?message\.sent"/,
    );
    // Nor forge a callback the connector would take in as its own.
    await expect(gateway.publish(event('connector.callback.kept'))).rejects.toThrow(
      /Permissions Violation for Publish to "evt\.connector\.callback\.kept"/,
    );
    await gateway.drain().catch(() => undefined);
  });

  it('keeps the dispatcher from sending through the connector', async () => {
    const before = connectorSends;
    await expect(
      buses['webhook-dispatcher'].request('cmd.connector.send-text', {
        workspace_id: workspaceId,
        integration_id: randomUUID(),
        message_id: randomUUID(),
        to: '+5511988880001',
        text: 'forjado',
      }),
    ).rejects.toMatchObject({
      status: 503,
      detail: 'Permissions Violation for Publish to "cmd.connector.send-text"',
    });
    expect(connectorSends).toBe(before);
  });
});
