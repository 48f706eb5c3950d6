import { randomUUID } from 'node:crypto';
import { describe, expect, expectTypeOf, it } from 'vitest';
import type { z } from 'zod';
import { eventTypes } from './event-types.js';
import {
  type EventData,
  type EventEnvelope,
  type EventType,
  eventCatalogue,
  isEventType,
  parseEventData,
  publicEventTypes,
} from './events.js';
import type { LeadMovedEvent } from './internal-events.js';

const workspace = randomUUID();
const integration = randomUUID();
const conversation = randomUUID();
const message = { id: randomUUID(), text: 'olá', type: 'text' as const };

// One well-formed event of each type; typed by the catalogue, so a new event does not compile without one.
const samples: { [T in EventType]: EventData<T> } = {
  'message.received': {
    event: 'message.received',
    workspace_id: workspace,
    conversation_id: conversation,
    contact: { id: randomUUID(), phone: '+5511999990000', name: 'Ana' },
    message,
    status: { assigned_to_type: null, assigned_to_id: null },
    integration: { id: integration, provider: 'chat' },
  },
  'message.sent': {
    event: 'message.sent',
    workspace_id: workspace,
    conversation_id: conversation,
    message,
    status: { sender_type: 'agent' },
    integration: { id: integration, provider: 'chat-official' },
  },
  'conversation.assigned': {
    event: 'conversation.assigned',
    workspace_id: workspace,
    conversation_id: conversation,
    status: { assigned_to_type: 'human', assigned_to_id: randomUUID() },
  },
  'conversation.resolved': {
    event: 'conversation.resolved',
    workspace_id: workspace,
    conversation_id: conversation,
    status: { value: 'resolved' },
  },
  'inbound.message': {
    workspace_id: workspace,
    integration: { id: integration, channel: 'alt-a', provider: 'chat' },
    provider_message_id: 'wamid.1',
    from: '+5511999990000',
    name: null,
    text: 'oi',
    type: 'text',
    sent_at: new Date().toISOString(),
  },
  'inbound.status': {
    workspace_id: workspace,
    integration_id: integration,
    provider_message_id: 'wamid.1',
    status: 'read',
    error: null,
  },
  'inbound.watermark': {
    workspace_id: workspace,
    integration_id: integration,
    channel: 'social',
    user_id: '6543219870100001',
    status: 'read',
    up_to: new Date().toISOString(),
  },
  'lead.moved': {
    workspace_id: workspace,
    contact_id: randomUUID(),
    pipeline_id: randomUUID(),
    pipeline_name: 'Vendas',
    from_stage: null,
    from_stage_name: null,
    to_stage: 'won',
    to_stage_name: 'Ganho',
    conversation_id: null,
    moved_at: new Date().toISOString(),
  },
  'connector.callback.kept': {
    workspace_id: workspace,
    integration_id: integration,
    batch: { messages: [], statuses: [] },
    trace_context: {},
    received_at: new Date().toISOString(),
  },
};
const types = Object.keys(eventCatalogue) as EventType[];

describe('event catalogue', () => {
  it('holds every named event and nothing else', () => {
    expect([...types].sort()).toEqual(Object.values(eventTypes).sort());
    expectTypeOf<EventType>().toEqualTypeOf<(typeof eventTypes)[keyof typeof eventTypes]>();
    for (const type of types) expect(isEventType(type)).toBe(true);
    expect(isEventType('thing.made')).toBe(false);
    expect(isEventType('toString')).toBe(false);
  });

  it('makes public exactly the spec’s four webhook events, in its order, each payload naming its event', () => {
    expect(publicEventTypes).toEqual([
      'message.received',
      'message.sent',
      'conversation.assigned',
      'conversation.resolved',
    ]);
    for (const type of publicEventTypes) {
      expect((eventCatalogue[type] as z.ZodObject).shape.event.value).toBe(type);
    }
  });

  it('gives every event a workspace in its data, which the envelope repeats', () => {
    for (const type of types) {
      const { workspace_id: _, ...rest } = samples[type];
      expect(() => parseEventData(type, rest), type).toThrow(/workspace_id/);
    }
  });
});

describe('parseEventData', () => {
  it('reads each event’s data with its own schema', () => {
    for (const type of types) expect(parseEventData(type, samples[type])).toEqual(samples[type]);
    expectTypeOf<ReturnType<typeof parseEventData<'lead.moved'>>>().toEqualTypeOf<LeadMovedEvent>();
  });

  it('refuses data of another shape: another event’s, a missing field, a bad value', () => {
    for (const type of types) {
      for (const other of types) {
        if (other !== type)
          expect(() => parseEventData(type, samples[other]), `${other} as ${type}`).toThrow();
      }
    }
    const { to_stage: _, ...noStage } = samples['lead.moved'];
    expect(() => parseEventData(eventTypes.leadMoved, noStage)).toThrow(/to_stage/);
    expect(() =>
      parseEventData(eventTypes.inboundMessage, { ...samples['inbound.message'], from: '5511' }),
    ).toThrow(/from/);
  });
});

describe('EventEnvelope', () => {
  it('types the data by the event type', () => {
    expectTypeOf<EventEnvelope<'lead.moved'>['data']>().toEqualTypeOf<LeadMovedEvent>();
    const envelope = {
      id: randomUUID(),
      workspace_id: workspace,
      occurred_at: new Date().toISOString(),
    };
    const moved: EventEnvelope<'lead.moved'> = {
      ...envelope,
      type: 'lead.moved',
      data: samples['lead.moved'],
    };
    const status = samples['inbound.status'];
    // @ts-expect-error: an inbound status is not a lead move's data
    const wrong: EventEnvelope<'lead.moved'> = { ...envelope, type: 'lead.moved', data: status };
    // @ts-expect-error: not an event of the catalogue
    const unknown: EventEnvelope = { ...envelope, type: 'thing.made', data: {} };
    // Over several types the envelope is their union, told apart by the type.
    const any: EventEnvelope = moved;
    if (any.type === eventTypes.leadMoved) expectTypeOf(any.data).toEqualTypeOf<LeadMovedEvent>();
    expect([wrong, unknown]).toHaveLength(2);
  });
});
