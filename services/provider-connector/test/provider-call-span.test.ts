// A provider call is one CLIENT span of the connector's own (callProvider, adapters/http.ts): named by its
// method, under the command's span, with the HTTP client attributes and the answer's status, and the
// provider is sent its context. No instrumentation traces undici (libs/telemetry/src/sdk.ts), so this is
// the call's only span.
import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { AddressPolicy, OutboundGuard } from '@inbox/outbound-http';
import { createSandbox } from '@inbox/provider-sandbox';
import { createLogger } from '@inbox/service-kit';
import { context, propagation, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { callProvider } from '../src/adapters/http.js';

const spans = new InMemorySpanExporter();
const received: IncomingHttpHeaders[] = [];
let answerStatus = 200;
const provider = createServer((req, res) => {
  received.push(req.headers);
  req.resume();
  req.on('end', () => {
    res.writeHead(answerStatus, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ messageId: 'p-1' }));
  });
});
let origin: string;
const guard = new OutboundGuard(AddressPolicy.fromSetting('127.0.0.0/8'), { timeoutMs: 2_000 });
const logger = createLogger('provider-connector', { level: 'silent' });

beforeAll(async () => {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(
    new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] }),
  );
  provider.listen(0, '127.0.0.1');
  await once(provider, 'listening');
  origin = `http://127.0.0.1:${(provider.address() as AddressInfo).port}`;
});
afterAll(async () => {
  provider.closeAllConnections();
  provider.close();
  await guard.close();
});
beforeEach(() => {
  spans.reset();
  received.length = 0;
  answerStatus = 200;
});

/** A provider call made inside a command's span, as the connector's handlers make them. */
async function callInCommand(url: string) {
  return trace.getTracer('test').startActiveSpan('process cmd.connector.send-text', async (command) => {
    try {
      return await callProvider(
        { guard, workspaceId: 'w1', logger, signal: AbortSignal.timeout(2_000) },
        'alt-a',
        new URL(url),
        {
          method: 'POST',
          headers: { 'client-token': 'k' },
          body: { phone: '5511900000001', message: 'hi' },
        },
      );
    } finally {
      command.end();
    }
  });
}

const spanNames = (): string[] =>
  spans
    .getFinishedSpans()
    .map((span) => span.name)
    .sort();

const spanNamed = (name: string): ReadableSpan => {
  const found = spans.getFinishedSpans().filter((span) => span.name === name);
  expect(found, `spans named ${name}`).toHaveLength(1);
  return found[0]!;
};

describe('a provider call', () => {
  it('is one client span under the command, whose context the provider gets', async () => {
    const answer = await callInCommand(`${origin}/instances/i1/send-text?x=1`);
    expect(answer).toMatchObject({ status: 200, ok: true, body: { messageId: 'p-1' } });

    expect(spanNames()).toEqual(['POST', 'process cmd.connector.send-text']);
    const client = spanNamed('POST');
    const command = spanNamed('process cmd.connector.send-text');
    expect(client.kind).toBe(SpanKind.CLIENT);
    expect(client.parentSpanContext?.spanId).toBe(command.spanContext().spanId);
    expect(client.attributes).toEqual({
      'http.request.method': 'POST',
      'url.full': `${origin}/instances/i1/send-text?x=1`,
      'server.address': '127.0.0.1',
      'server.port': (provider.address() as AddressInfo).port,
      'http.response.status_code': 200,
    });
    expect(client.status.code).toBe(SpanStatusCode.UNSET);
    const { traceId, spanId } = client.spanContext();
    expect(received).toHaveLength(1);
    expect(received[0]!.traceparent).toBe(`00-${traceId}-${spanId}-01`);
    expect(received[0]!['client-token']).toBe('k');
  });

  it("has no span of the provider's under it: the sandbox, like a real provider, is in no trace of ours", async () => {
    const sandbox = createServer(createSandbox().app);
    sandbox.listen(0, '127.0.0.1');
    await once(sandbox, 'listening');
    try {
      const answer = await callInCommand(
        `http://127.0.0.1:${(sandbox.address() as AddressInfo).port}/alt-a/message/sendText/i1`,
      );
      // No such instance: Evolution's 404, answered without a span of its own.
      expect(answer).toMatchObject({ status: 404, ok: false });
      expect(spanNames()).toEqual(['POST', 'process cmd.connector.send-text']);
    } finally {
      sandbox.closeAllConnections();
      sandbox.close();
    }
  });

  it('marks an answer of 400 or more as the call failing, and still returns it', async () => {
    answerStatus = 503;
    const answer = await callInCommand(`${origin}/send`);
    expect(answer).toMatchObject({ status: 503, ok: false });
    const client = spanNamed('POST');
    expect(client.attributes).toMatchObject({ 'http.response.status_code': 503, 'error.type': '503' });
    expect(client.status.code).toBe(SpanStatusCode.ERROR);
  });

  it('records a call that got no answer as the failed span, and throws the provider error', async () => {
    const closed = createServer();
    closed.listen(0, '127.0.0.1');
    await once(closed, 'listening');
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));

    await expect(callInCommand(`http://127.0.0.1:${port}/send`)).rejects.toThrow(/alt-a unreachable/);
    const client = spanNamed('POST');
    expect(client.status.code).toBe(SpanStatusCode.ERROR);
    expect(client.events.map((event) => event.name)).toEqual(['exception']);
    expect(client.attributes['http.response.status_code']).toBeUndefined();
  });
});
