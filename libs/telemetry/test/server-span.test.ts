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
import {
  annotateServerSpan,
  bindToServerSpan,
  serverSpanRouteSetter,
  traceAdmitted,
  traceIncoming,
  traceIncomingOnceAdmitted,
} from '../src/server-span.js';
import { activeTraceIds, bindToActiveContext, startSpan } from '../src/tracing.js';

const exporter = new InMemorySpanExporter();
let sdk: StartedTelemetry;
let server: import('node:http').Server;
let base: string;
/** A server whose spans start once a request is admitted, as the gateway's do. */
let door: import('node:http').Server;
let doorBase: string;
/** What the door's access-log stand-in saw when each response finished: the trace ids then active. */
const finishedIn = new Map<string, ReturnType<typeof activeTraceIds>>();

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

  door = http.createServer((req, res) =>
    traceIncomingOnceAdmitted(req, res, () => {
      // As service-kit's access log: annotated and named before the route decides, logged at the end.
      annotateServerSpan({ 'request.id': req.url! });
      const nameRoute = serverSpanRouteSetter();
      // The door's own work (a key looked up) is not traced: its span would hang from nothing.
      void startSpan('key lookup', async () => undefined);
      res.on(
        'finish',
        bindToServerSpan(() => finishedIn.set(req.url!, activeTraceIds())),
      );
      if (req.url === '/refused') {
        res.statusCode = 401;
        res.end();
        return;
      }
      // The door's checks take a while before the request is admitted (a key lookup, a rate limit).
      setTimeout(() => {
        annotateServerSpan({ 'workspace.id': 'w1' });
        traceAdmitted(req, res, () => {
          annotateServerSpan({ 'admitted.after': true });
          void startSpan('handle', async () => {
            nameRoute('/admitted');
            res.statusCode = 200;
            res.end();
          });
        });
      }, 20);
    }),
  );
  await new Promise<void>((resolve) => door.listen(0, '127.0.0.1', resolve));
  doorBase = `http://127.0.0.1:${(door.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((resolve) => door?.close(resolve));
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

describe('traceIncomingOnceAdmitted', () => {
  it("traces a refused request not at all, and logs it in the caller's trace", async () => {
    exporter.reset();
    expect((await call(`${doorBase}/refused`, { headers: { traceparent } })).status).toBe(401);
    // A request traced after it: once its spans are out, the refused one's would be too.
    expect((await call(`${doorBase}/admitted`)).status).toBe(200);
    const spans = await finished(2);
    expect(spans.filter((span) => span.spanContext().traceId === traceId)).toEqual([]);
    expect(spans.map((span) => span.attributes['url.path'])).not.toContain('/refused');
    expect(spans.map((span) => span.name)).not.toContain('key lookup');
    expect(finishedIn.get('/refused')).toEqual({ trace_id: traceId, span_id: callerSpanId });
  });

  it("dates an admitted request's span from its arrival, with what was said of it before", async () => {
    exporter.reset();
    const sent = Date.now();
    const response = await call(`${doorBase}/admitted`, { headers: { traceparent } });
    expect(response.status).toBe(200);
    const spans = await finished(2);
    const server = spans.find((span) => span.kind === SpanKind.SERVER)!;
    expect(server.name).toBe('GET /admitted');
    expect(server.spanContext().traceId).toBe(traceId);
    expect(server.parentSpanContext?.spanId).toBe(callerSpanId);
    expect(server.attributes).toMatchObject({
      'request.id': '/admitted',
      'workspace.id': 'w1',
      'admitted.after': true,
      'http.route': '/admitted',
      'http.response.status_code': 200,
    });
    // Started on arrival, not on admission 20 ms later; ended by the same clock.
    const startMs = server.startTime[0] * 1e3 + server.startTime[1] / 1e6;
    expect(startMs - sent).toBeLessThan(15);
    const durationMs = server.duration[0] * 1e3 + server.duration[1] / 1e6;
    expect(durationMs).toBeGreaterThanOrEqual(19);
    const handler = spans.find((span) => span.name === 'handle')!;
    expect(handler.parentSpanContext?.spanId).toBe(server.spanContext().spanId);
    // The access line written at the end carries the server span's ids, not the caller's.
    expect(finishedIn.get('/admitted')).toEqual({
      trace_id: traceId,
      span_id: server.spanContext().spanId,
    });
  });

  it("reads the request's attributes when its span starts, in a trace of its own without a caller's", async () => {
    exporter.reset();
    const response = await call(`${doorBase}/admitted?page=2`, { headers: { 'user-agent': 'door-test' } });
    expect(response.status).toBe(200);
    const spans = await finished(2);
    const server = spans.find((span) => span.kind === SpanKind.SERVER)!;
    expect(server.parentSpanContext).toBeUndefined();
    expect(server.spanContext().traceId).not.toBe(traceId);
    expect(server.attributes).toMatchObject({
      'http.request.method': 'GET',
      'url.scheme': 'http',
      'url.path': '/admitted',
      'url.query': 'page=2',
      'network.protocol.version': '1.1',
      'client.address': '127.0.0.1',
      'user_agent.original': 'door-test',
      'request.id': '/admitted?page=2',
      'workspace.id': 'w1',
      'admitted.after': true,
    });
    // The door's work before admission stayed out of the trace here too.
    expect(spans.map((span) => span.name)).not.toContain('key lookup');
    expect(finishedIn.get('/admitted?page=2')).toEqual({
      trace_id: server.spanContext().traceId,
      span_id: server.spanContext().spanId,
    });
  });
});
