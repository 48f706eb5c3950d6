// withHttpClientSpan, with the SDK configured as the services configure it: the call is one CLIENT span
// named for what it does, the HTTP instrumentation adds none of its own, and the receiver gets the
// span's context to continue.
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SpanKind, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { prometheusExporter } from '../src/metrics.js';
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

/** How many calls to the receiver the HTTP instrumentation has timed (http.client.request.duration). */
async function timedCalls(): Promise<number> {
  const { resourceMetrics } = await prometheusExporter().collect();
  const port = (receiver.address() as AddressInfo).port;
  return resourceMetrics.scopeMetrics
    .flatMap((scope) => scope.metrics)
    .filter((metric) => metric.descriptor.name === 'http.client.request.duration')
    .flatMap((metric) => metric.dataPoints as Array<{ attributes: Record<string, unknown>; value: unknown }>)
    .filter((point) => point.attributes['server.port'] === port)
    .reduce((sum, point) => sum + (point.value as { count: number }).count, 0);
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
    // The instrumentation left the call alone: no span of its own for the same POST (only ours and its
    // parent) and no duration recorded a second time.
    expect(await timedCalls()).toBe(0);
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

  it('leaves other calls to the HTTP instrumentation', async () => {
    await startSpan('process cmd.connector.send-text', async () => {
      await post(`${base}/provider`);
    });
    const spans = await exported();
    const client = spans.find((span) => span.name === 'POST');
    expect(client, 'the instrumentation span').toBeDefined();
    expect(await timedCalls()).toBe(1);
    expect(received[0]!.traceparent).toBe(
      `00-${client!.spanContext().traceId}-${client!.spanContext().spanId}-01`,
    );
  });
});
