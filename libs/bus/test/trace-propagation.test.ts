import { randomUUID } from 'node:crypto';
import { laneOf } from '@inbox/contracts';
import { uniquePrefix, waitFor } from '@inbox/testkit';
import { context, propagation, SpanKind, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, beforeEach, describe, expect, inject, it } from 'vitest';
import { type Bus, NatsBus } from '../src/index.js';
import { RabbitBus } from '../src/rabbitmq-transport.js';

const exporter = new InMemorySpanExporter();

beforeAll(() => {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(
    new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }),
  );
});

const transports = [
  {
    system: 'nats',
    connect: () => NatsBus.connect({ url: inject('infra').natsUrl, prefix: uniquePrefix() }),
  },
  {
    system: 'rabbitmq',
    connect: () => RabbitBus.connect({ url: inject('infra').rabbitmqUrl, prefix: uniquePrefix() }),
  },
] as const;

describe.each(transports)('trace context over $system', ({ system, connect }) => {
  let bus: Bus;
  beforeAll(async () => {
    bus = await connect();
  });
  beforeEach(() => exporter.reset());
  afterAll(() => bus.drain());

  it("continues the sender's span in command handlers and event consumers, with messaging attributes", async () => {
    let handlerTraceId: string | undefined;
    let consumerTraceId: string | undefined;
    await bus.handle('cmd.dispatcher.list-deliveries', async () => {
      handlerTraceId = trace.getActiveSpan()?.spanContext().traceId;
      return { deliveries: [] };
    });
    await bus.consume({ durable: 'traced', filter: '>' }, async () => {
      consumerTraceId = trace.getActiveSpan()?.spanContext().traceId;
    });

    const tracer = trace.getTracer('test');
    const eventId = randomUUID();
    // A workspace of lane 0, whose webhook events travel on the subject of their type.
    let workspaceId = randomUUID();
    while (laneOf(workspaceId) !== 0) workspaceId = randomUUID();
    const root = await tracer.startActiveSpan('POST /api/v1/send-message', async (span) => {
      await bus.request('cmd.dispatcher.list-deliveries', {
        workspace_id: randomUUID(),
        webhook_id: randomUUID(),
      });
      await bus.publish({
        id: eventId,
        type: 'message.sent',
        workspace_id: workspaceId,
        occurred_at: new Date().toISOString(),
        data: {},
      });
      span.end();
      return span.spanContext();
    });
    await waitFor(() => consumerTraceId, { what: 'the consumer span' });

    expect(handlerTraceId).toBe(root.traceId);
    expect(consumerTraceId).toBe(root.traceId);
    const spans = exporter.getFinishedSpans();
    // Sending makes no span of its own: each consumer's span is the sending span's child.
    expect(spans.filter((s) => s.kind === SpanKind.PRODUCER)).toEqual([]);
    const process = spans.find((s) => s.kind === SpanKind.CONSUMER && s.name === 'process evt.message.sent')!;
    expect(process.parentSpanContext?.spanId).toBe(root.spanId);
    expect(process.attributes).toMatchObject({
      'messaging.system': system,
      'messaging.destination.name': 'evt.message.sent',
      'messaging.operation.type': 'process',
      'messaging.message.id': eventId,
    });
    const handle = spans.find(
      (s) => s.kind === SpanKind.CONSUMER && s.name === 'process cmd.dispatcher.list-deliveries',
    )!;
    expect(handle.parentSpanContext?.spanId).toBe(root.spanId);
  });

  it('names the lane an inbound event travelled in', async () => {
    let workspaceId = randomUUID();
    while (laneOf(workspaceId) === 0) workspaceId = randomUUID();
    const handled: string[] = [];
    await bus.consume({ durable: 'traced-lanes', filter: '>' }, async (event) => {
      handled.push(event.id);
    });
    const event = {
      id: randomUUID(),
      type: 'inbound.status',
      workspace_id: workspaceId,
      occurred_at: new Date().toISOString(),
      data: {},
    };
    await bus.publish(event);
    const subject = `evt.lane${laneOf(workspaceId)}.inbound.status`;
    // The span ends just after its handler.
    const process = await waitFor(
      () => exporter.getFinishedSpans().find((s) => s.name === `process ${subject}`),
      { what: "the inbound event's span" },
    );
    expect(handled).toContain(event.id);
    expect(process.attributes).toMatchObject({ 'messaging.destination.name': subject });
  });
});
