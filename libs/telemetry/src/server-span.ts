import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  type Attributes,
  type Context,
  context,
  createContextKey,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api';
import { suppressTracing } from '@opentelemetry/core';
import { tracer } from './tracing.js';

const serverSpanKey = createContextKey('inbox HTTP server span');

function pathAndQuery(url: string | undefined): { path: string; query?: string } {
  const target = url ?? '/';
  const mark = target.indexOf('?');
  return mark === -1 ? { path: target } : { path: target.slice(0, mark), query: target.slice(mark + 1) };
}

/** The context of a request whose span has not started: nothing it does is traced. */
const untracedRoot = suppressTracing(ROOT_CONTEXT);

/**
 * The HTTP server span of one request, with the stable semantic conventions' attributes, continuing the
 * caller's trace (W3C `traceparent`) and dated from the request's arrival, whenever it is started. Its
 * attributes are read from the request only when it starts: most requests refused at the door never
 * start one, and they are the ones a flood is made of.
 */
class ServerSpan {
  private readonly arrival = performance.now();
  /** What was annotated before the span started. */
  private annotations: Attributes | undefined;
  /**
   * The caller's trace, with this span's state in it. Made when first needed: without a caller's trace,
   * a request refused at the door never needs it.
   */
  private parent: Context | undefined;
  private span: Span | undefined;
  private route: string | undefined;
  /**
   * The context the request is handled in: its server span once started. Before, the caller's trace
   * with tracing suppressed, so that the door's own work (a key looked up) leaves no span hanging from
   * a server span that may never exist.
   */
  current: Context;

  constructor(
    private readonly req: IncomingMessage,
    private readonly res: ServerResponse,
    untilAdmitted: boolean,
  ) {
    const caller = propagation.extract(ROOT_CONTEXT, req.headers);
    // Without a caller's trace (the usual case), one context made once stands for the suppression.
    if (untilAdmitted && caller === ROOT_CONTEXT) this.current = untracedRoot.setValue(serverSpanKey, this);
    else {
      this.parent = caller.setValue(serverSpanKey, this);
      this.current = untilAdmitted ? suppressTracing(this.parent) : this.parent;
    }
  }

  private attributes(): Attributes {
    const req = this.req;
    const { path, query } = pathAndQuery(req.url);
    const attributes: Attributes = {
      'http.request.method': req.method ?? 'GET',
      'url.scheme': 'http',
      'url.path': path,
      'network.protocol.version': req.httpVersion,
    };
    if (query !== undefined) attributes['url.query'] = query;
    if (req.socket.remoteAddress) attributes['client.address'] = req.socket.remoteAddress;
    if (req.headers['user-agent']) attributes['user_agent.original'] = req.headers['user-agent'];
    return this.annotations ? Object.assign(attributes, this.annotations) : attributes;
  }

  start(): Context {
    if (this.span) return this.current;
    this.parent ??= ROOT_CONTEXT.setValue(serverSpanKey, this);
    const parent = this.parent;
    // Both ends are performance timestamps: a start time given as a date would make the SDK date the end
    // by the millisecond clock too.
    const span = tracer().startSpan(
      this.method,
      { kind: SpanKind.SERVER, attributes: this.attributes(), startTime: this.arrival },
      parent,
    );
    this.span = span;
    this.current = trace.setSpan(parent, span);
    if (this.res.closed) this.end();
    else this.res.once('close', () => this.end());
    return this.current;
  }

  annotate(attributes: Attributes): void {
    if (this.span) this.span.setAttributes(attributes);
    else
      this.annotations = this.annotations ? Object.assign(this.annotations, attributes) : { ...attributes };
  }

  nameRoute(route: string): void {
    this.route = route;
  }

  private get method(): string {
    return this.req.method ?? 'GET';
  }

  private end(): void {
    const span = this.span!;
    if (this.route) {
      span.updateName(`${this.method} ${this.route}`);
      span.setAttribute('http.route', this.route);
    }
    const res = this.res;
    if (res.headersSent) span.setAttribute('http.response.status_code', res.statusCode);
    if (!res.writableFinished) {
      span.setStatus({
        code: SpanStatusCode.ERROR,
        message: 'the connection closed before the response ended',
      });
    } else if (res.statusCode >= 500) {
      span.setStatus({ code: SpanStatusCode.ERROR });
    }
    span.end(performance.now());
  }
}

const serverSpanOf = (ctx: Context) => ctx.getValue(serverSpanKey) as ServerSpan | undefined;

/**
 * Runs `next` inside the request's HTTP server span, named `METHOD route` once the route is known
 * (`serverSpanRouteSetter`).
 *
 * Why not the HTTP instrumentation's incoming side (sdk.ts turns it off): it cost a refused request
 * about 0.17 ms of a 0.47 ms total (door bench, bench/RESULTS.md), mostly binding the request and the
 * response, so that every listener added to either is wrapped, and reading every attribute it knows.
 * Nothing is bound here: code continued from a listener on the request (a body parser calling `next` from
 * the body's `end` event) binds its continuation (`bindToActiveContext`), and so does a response listener
 * that logs (`bindToServerSpan`).
 */
export function traceIncoming(req: IncomingMessage, res: ServerResponse, next: () => void): void {
  context.with(new ServerSpan(req, res, false).start(), next);
}

/**
 * As `traceIncoming`, except that the span starts only when the request is admitted (`traceAdmitted`, in
 * its route after the door's checks), dated from its arrival. A request refused at the door (a wrong key,
 * a spent rate limit, an invalid input) or asking for no route is not traced: recording its span cost the
 * gateway as much CPU as the refusal itself, and a flood of them, which needs no key, would crowd everyone's
 * spans out of the export queue. The metrics count them and the access log has each one by request id.
 */
export function traceIncomingOnceAdmitted(req: IncomingMessage, res: ServerResponse, next: () => void): void {
  context.with(new ServerSpan(req, res, true).current, next);
}

/** Starts the server span of a request `traceIncomingOnceAdmitted` received, and goes on inside it. */
export function traceAdmitted(_req: IncomingMessage, _res: ServerResponse, next: () => void): void {
  const serverSpan = serverSpanOf(context.active());
  if (serverSpan) context.with(serverSpan.start(), next);
  else next();
}

/**
 * Names the HTTP server span of the request being handled by its route pattern, the way the express
 * instrumentation did (`http.route`, span `POST /api/v1/send-message`) without its per-layer wrappers,
 * which cost a quarter of a refused request's CPU. Call it while the request's context is active; the
 * returned function takes the route once it is known, before the response closes.
 */
export function serverSpanRouteSetter(): (route: string) => void {
  const serverSpan = serverSpanOf(context.active());
  return (route) => serverSpan?.nameRoute(route);
}

/** Adds attributes to the server span of the request being handled, now or when it starts. */
export function annotateServerSpan(attributes: Attributes): void {
  serverSpanOf(context.active())?.annotate(attributes);
}

/**
 * `fn`, run in the context of the request being handled as it is when `fn` is called: inside its server
 * span if that has started by then (a log line written when the response finishes carries its trace id).
 */
export function bindToServerSpan(fn: () => void): () => void {
  const serverSpan = serverSpanOf(context.active());
  if (!serverSpan) return context.bind(context.active(), fn);
  return () => context.with(serverSpan.current, fn);
}
