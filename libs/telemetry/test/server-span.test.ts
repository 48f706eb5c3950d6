// The HTTP server span every service starts (traceIncoming), with the SDK configured as the services
// configure it: it continues the caller's trace, is named by the route, keeps work continued from the
// request body's events (bound) in the trace, and records the status.
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { waitFor } from '@inbox/testkit';
import { context, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { suppressTracing } from '@opentelemetry/core';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type StartedTelemetry, startTracing } from '../src/sdk.js';
import { traceIncoming } from '../src/server-span.js';
import { bindToActiveContext, serverSpanRouteSetter, startSpan } from '../src/tracing.js';

const exporter = new InMemorySpanExporter();
let sdk: StartedTelemetry;
let server: import('node:http').Server;
let base: string;

const traceId = '0af7651916cd43dd8448eb211c80319c';
const callerSpanId = 'b7ad6b7169203331';
const traceparent = `00-${traceId}-${callerSpanId}-01`;

beforeAll(async () => {
  sdk = startTracing('server-span-test', exporter);
  const http = createRequire(import.meta.url)('node:http') as typeof import('node:http');
  server = http.createServer((req, res) =>
    traceIncoming(req, res, () => {
      const nameRoute = serverSpanRouteSetter();
      if (req.url === '/fails') {
        res.statusCode = 503;
        res.end();
        return;
      }
      // As a body parser does: the handler goes on from the request's `end` event, which fires in the
      // connection's context, so it binds its continuation (as service-kit's inRequestContext does).
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on(
        'end',
        bindToActiveContext(() => {
          void startSpan('handle the body', async () => {
            nameRoute('/things/{id}');
            res.statusCode = 201;
            res.end(Buffer.concat(chunks));
          });
        }),
      );
    }),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve));
  await sdk.shutdown();
});

/** A call from outside: this process's own fetch instrumentation stays out of it. */
const call = (url: string, init?: RequestInit) =>
  context.with(suppressTracing(context.active()), () => fetch(url, init));

async function finished(count: number): Promise<ReadableSpan[]> {
  const provider = trace.getTracerProvider() as { getDelegate?: () => { forceFlush?: () => Promise<void> } };
  let spans: ReadableSpan[] = [];
  await waitFor(
    async () => {
      await provider.getDelegate?.().forceFlush?.();
      spans = exporter.getFinishedSpans();
      return spans.length >= count;
    },
    { what: `${count} span(s)`, timeoutMs: 5_000 },
  );
  return spans;
}

describe('traceIncoming', () => {
  it("continues the caller's trace, names the span by its route and keeps the body's handler in it", async () => {
    exporter.reset();
    const response = await call(`${base}/things/42?page=2`, {
      method: 'POST',
      headers: { traceparent, 'user-agent': 'test-agent' },
      body: 'a body in chunks',
    });
    expect(response.status).toBe(201);
    expect(await response.text()).toBe('a body in chunks');

    const spans = await finished(2);
    const server = spans.find((span) => span.kind === SpanKind.SERVER)!;
    expect(server.name).toBe('POST /things/{id}');
    expect(server.spanContext().traceId).toBe(traceId);
    expect(server.parentSpanContext?.spanId).toBe(callerSpanId);
    expect(server.attributes).toMatchObject({
      'http.request.method': 'POST',
      'http.route': '/things/{id}',
      'http.response.status_code': 201,
      'url.path': '/things/42',
      'url.query': 'page=2',
      'user_agent.original': 'test-agent',
    });
    expect(server.status.code).toBe(SpanStatusCode.UNSET);
    const handler = spans.find((span) => span.name === 'handle the body')!;
    expect(handler.parentSpanContext?.spanId).toBe(server.spanContext().spanId);
  });

  it('marks a 5xx answer as an error, and starts a trace of its own without a traceparent', async () => {
    exporter.reset();
    expect((await call(`${base}/fails`)).status).toBe(503);
    const [server] = await finished(1);
    expect(server!.name).toBe('GET');
    expect(server!.parentSpanContext).toBeUndefined();
    expect(server!.attributes['http.response.status_code']).toBe(503);
    expect(server!.status.code).toBe(SpanStatusCode.ERROR);
  });
});
