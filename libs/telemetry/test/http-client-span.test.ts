// withHttpClientSpan, with the SDK configured as the services configure it: the call is one CLIENT span
// named for what it does, no instrumentation adds one of its own, and the receiver gets the span's
// context to continue.
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SpanKind, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type StartedTelemetry, startTracing } from '../src/sdk.js';
import { startSpan, withHttpClientSpan } from '../src/tracing.js';

const exporter = new InMemorySpanExporter();
let sdk: StartedTelemetry;
let receiver: Server;
let base: string;
let received: IncomingHttpHeaders[] = [];

beforeAll(async () => {
  sdk = startTracing('http-client-span-test', exporter);
  receiver = createServer((req, res) => {
    received.push(req.headers);
    req.resume();
    req.on('end', () => res.end('ok'));
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
});
afterAll(async () => {
  receiver?.close();
  await sdk?.shutdown();
});
beforeEach(() => {
  exporter.reset();
  received = [];
});

async function post(url: string, headers: Record<string, string> = {}) {
  const response = await fetch(url, { method: 'POST', body: '{}', headers });
  await response.text();
  return response.status;
}

/** What has been exported once the batch is flushed. */
async function exported(): Promise<ReadableSpan[]> {
  const provider = trace.getTracerProvider() as { getDelegate?: () => { forceFlush?: () => Promise<void> } };
  await provider.getDelegate?.().forceFlush?.();
  return exporter.getFinishedSpans();
}

describe('withHttpClientSpan', () => {
  it('makes the call one client span, named for it, whose context the receiver gets', async () => {
    await startSpan('process evt.message.sent', () =>
      withHttpClientSpan(
        'webhook deliver message.sent',
        { method: 'POST', url: `${base}/hook?token=s3cret`, attributes: { 'webhook.endpoint.id': 'e1' } },
        async (span, traceHeaders) => {
          span.setAttribute(
            'http.response.status_code',
            await post(`${base}/hook?token=s3cret`, traceHeaders),
          );
        },
      ),
    );
    const spans = await exported();
    // Ours and its parent: nothing else traced the same POST.
    expect(spans.map((span) => span.name).sort()).toEqual([
      'process evt.message.sent',
      'webhook deliver message.sent',
    ]);
    const deliver = spans.find((span) => span.name === 'webhook deliver message.sent')!;
    expect(deliver.kind).toBe(SpanKind.CLIENT);
    expect(deliver.attributes).toMatchObject({
      'http.request.method': 'POST',
      'server.address': '127.0.0.1',
      'server.port': (receiver.address() as AddressInfo).port,
      'url.full': `${base}/hook?token=REDACTED`,
      'http.response.status_code': 200,
      'webhook.endpoint.id': 'e1',
    });
    const { traceId, spanId } = deliver.spanContext();
    expect(received).toHaveLength(1);
    expect(received[0]!.traceparent).toBe(`00-${traceId}-${spanId}-01`);
  });

  it('is what traces an undici call: one made outside it is no span and sends no context', async () => {
    await startSpan('process cmd.connector.send-text', async () => {
      await post(`${base}/provider`);
    });
    const spans = await exported();
    expect(spans.map((span) => span.name)).toEqual(['process cmd.connector.send-text']);
    expect(received[0]!.traceparent).toBeUndefined();
  });
});
