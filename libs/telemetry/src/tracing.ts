import {
  type Attributes,
  type Context,
  context,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api';
import { suppressTracing } from '@opentelemetry/core';

/** The tracer every span of ours is started with. */
export const tracer = () => trace.getTracer('inbox');

/** `fn`, run in the context active now whenever it is called (an event listener, say). */
export function bindToActiveContext<F extends (...args: never[]) => unknown>(fn: F): F {
  return context.bind(context.active(), fn);
}

function recordFailure(span: Span, error: unknown): void {
  span.recordException(error instanceof Error ? error : new Error(String(error)));
  span.setStatus({
    code: SpanStatusCode.ERROR,
    message: error instanceof Error ? error.message : String(error),
  });
}

/** Runs `fn` inside a new active span that records an exception and ends however `fn` finishes. */
export function startSpan<T>(
  name: string,
  fn: (span: Span) => Promise<T>,
  options: { kind?: SpanKind; attributes?: Attributes; parent?: Context } = {},
): Promise<T> {
  return tracer().startActiveSpan(
    name,
    { kind: options.kind ?? SpanKind.INTERNAL, attributes: options.attributes },
    options.parent ?? context.active(),
    async (span) => {
      try {
        return await fn(span);
      } catch (error) {
        recordFailure(span, error);
        throw error;
      } finally {
        span.end();
      }
    },
  );
}

/** A carrier over message headers: NATS and AMQP header names are matched case-insensitively. */
export interface HeaderCarrier {
  get(name: string): string | undefined;
  set(name: string, value: string): void;
  keys(): string[];
}

export function injectContext(carrier: HeaderCarrier, ctx: Context = context.active()): void {
  propagation.inject(ctx, carrier, {
    set: (c, key, value) => c.set(key, value),
  });
}

/** Consumers continue the producer's trace from the root context, never from whatever is active. */
export function extractContext(carrier: HeaderCarrier): Context {
  return propagation.extract(ROOT_CONTEXT, carrier, {
    get: (c, key) => c.get(key) ?? findCaseInsensitive(c, key),
    keys: (c) => c.keys(),
  });
}

function findCaseInsensitive(carrier: HeaderCarrier, key: string): string | undefined {
  const wanted = key.toLowerCase();
  const match = carrier.keys().find((k) => k.toLowerCase() === wanted);
  return match === undefined ? undefined : carrier.get(match);
}

/** What a consumer's span says of the message it processes. */
export interface MessagingSpanInfo {
  system: 'nats' | 'rabbitmq' | 'in-process';
  destination: string;
  messageId?: string;
  attributes?: Attributes;
}

function messagingAttributes(info: MessagingSpanInfo): Attributes {
  return {
    'messaging.system': info.system,
    'messaging.destination.name': info.destination,
    'messaging.operation.type': 'process',
    ...(info.messageId ? { 'messaging.message.id': info.messageId } : {}),
    ...info.attributes,
  };
}

/**
 * A CONSUMER span whose parent is the context the producer put in the headers: the span that sent the
 * message (a request's server span, a handler's own span, the span an outbox row was written in). No
 * PRODUCER span stands between them: it held nothing the consumer's span lacks, and the time on the bus
 * shows as the gap between the two and in `bus_command_duration` and `outbox_publish_lag` (ADR 0012).
 */
export function withConsumerSpan<T>(
  info: MessagingSpanInfo,
  carrier: HeaderCarrier,
  fn: (span: Span) => Promise<T>,
): Promise<T> {
  return startSpan(`process ${info.destination}`, fn, {
    kind: SpanKind.CONSUMER,
    attributes: messagingAttributes(info),
    parent: extractContext(carrier),
  });
}

/** The ids of the active span, for log lines. */
export function activeTraceIds(): { trace_id: string; span_id: string } | undefined {
  const spanContext = trace.getActiveSpan()?.spanContext();
  if (!spanContext || !trace.isSpanContextValid(spanContext)) return undefined;
  return { trace_id: spanContext.traceId, span_id: spanContext.spanId };
}

/** The active trace context as plain headers, to be stored beside work that another process will pick up. */
export function captureContext(): Record<string, string> {
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier;
}

/** Runs `fn` in the trace context that `captureContext` stored, so deferred work joins the original trace. */
export function withCapturedContext<T>(carrier: Record<string, string> | null | undefined, fn: () => T): T {
  if (!carrier || Object.keys(carrier).length === 0) return fn();
  return context.with(propagation.extract(ROOT_CONTEXT, carrier), fn);
}

/**
 * Runs `fn` outside the active span, so what only traces work inside an operation (libs/db's statements)
 * leaves it alone: for statements that tell nothing on their own, such as a transaction's `begin` and
 * `commit`, whose time shows in the operation's span anyway.
 */
export function outsideSpans<T>(fn: () => T): T {
  return context.with(trace.deleteSpan(context.active()), fn);
}

export interface HttpClientCall {
  method: string;
  /** As the caller has it: a URL already parsed is not parsed again. */
  url: string | URL;
  attributes?: Attributes;
}

/**
 * A CLIENT span around one outgoing HTTP call, named for what the call does (a webhook delivery, say) or,
 * as the HTTP client conventions name it otherwise, by its method (a provider call). Every outgoing
 * undici call of the services is made through here: no instrumentation traces undici (sdk.ts). The call
 * runs with tracing suppressed, so that a client built on node:http, which is instrumented, adds no second
 * span or duration either. `fn` gets the headers that carry this span's context, for the call to send on,
 * so the receiver's spans are this one's children.
 */
export function withHttpClientSpan<T>(
  name: string,
  call: HttpClientCall,
  fn: (span: Span, traceHeaders: Record<string, string>) => Promise<T>,
): Promise<T> {
  return startSpan(
    name,
    (span) => {
      const traceHeaders = captureContext();
      return context.with(suppressTracing(context.active()), () => fn(span, traceHeaders));
    },
    {
      kind: SpanKind.CLIENT,
      attributes: { ...httpClientAttributes(call.method, call.url), ...call.attributes },
    },
  );
}

/** What the HTTP client conventions say of a call (the span processor redacts `url.full`). */
function httpClientAttributes(method: string, url: string | URL): Attributes {
  const full = typeof url === 'string' ? url : url.href;
  const parsed = typeof url === 'string' ? URL.parse(url) : url;
  if (!parsed) return { 'http.request.method': method, 'url.full': full };
  return {
    'http.request.method': method,
    'url.full': full,
    'server.address': parsed.hostname.replace(/^\[|\]$/g, ''),
    'server.port': Number(parsed.port || (parsed.protocol === 'https:' ? 443 : 80)),
  };
}
