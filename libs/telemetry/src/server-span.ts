import type { IncomingMessage, ServerResponse } from 'node:http';
import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { RPCType, setRPCMetadata } from '@opentelemetry/core';
import { tracer } from './tracing.js';

function pathAndQuery(url: string | undefined): { path: string; query?: string } {
  const target = url ?? '/';
  const mark = target.indexOf('?');
  return mark === -1 ? { path: target } : { path: target.slice(0, mark), query: target.slice(mark + 1) };
}

/**
 * The HTTP server span of one request, continuing the caller's trace (W3C `traceparent`), with the
 * stable semantic conventions' attributes, named `METHOD route` once the route is known
 * (`serverSpanRouteSetter`). Runs `next` inside it.
 *
 * Why not the HTTP instrumentation's incoming side (sdk.ts turns it off): it cost a refused request
 * about 0.17 ms of a 0.47 ms total (door bench, bench/RESULTS.md), mostly binding the request and the
 * response, so that every listener added to either is wrapped, and reading every attribute it knows.
 * Nothing is bound here: code continued from a listener on the request (a body parser calling `next` from
 * the body's `end` event) binds its continuation (`bindToActiveContext`), and so does a response listener
 * that logs.
 */
export function traceIncoming(req: IncomingMessage, res: ServerResponse, next: () => void): void {
  const method = req.method ?? 'GET';
  const { path, query } = pathAndQuery(req.url);
  const parent = propagation.extract(ROOT_CONTEXT, req.headers);
  const span = tracer().startSpan(
    method,
    {
      kind: SpanKind.SERVER,
      attributes: {
        'http.request.method': method,
        'url.scheme': 'http',
        'url.path': path,
        ...(query === undefined ? {} : { 'url.query': query }),
        'network.protocol.version': req.httpVersion,
        ...(req.socket.remoteAddress ? { 'client.address': req.socket.remoteAddress } : {}),
        ...(req.headers['user-agent'] ? { 'user_agent.original': req.headers['user-agent'] } : {}),
      },
    },
    parent,
  );
  const rpc: { type: RPCType.HTTP; span: typeof span; route?: string } = { type: RPCType.HTTP, span };
  const active = setRPCMetadata(trace.setSpan(parent, span), rpc);
  res.once('close', () => {
    if (rpc.route) {
      span.updateName(`${method} ${rpc.route}`);
      span.setAttribute('http.route', rpc.route);
    }
    if (res.headersSent) span.setAttribute('http.response.status_code', res.statusCode);
    if (!res.writableFinished) {
      span.setStatus({
        code: SpanStatusCode.ERROR,
        message: 'the connection closed before the response ended',
      });
    } else if (res.statusCode >= 500) {
      span.setStatus({ code: SpanStatusCode.ERROR });
    }
    span.end();
  });
  context.with(active, next);
}
