import { createRequire } from 'node:module';
import {
  context,
  createNoopMeter,
  DiagConsoleLogger,
  diag,
  metrics,
  propagation,
  trace,
} from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  CompositePropagator,
  diagLogLevelFromString,
  W3CBaggagePropagator,
  W3CTraceContextPropagator,
} from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { type Instrumentation, registerInstrumentations } from '@opentelemetry/instrumentation';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { RuntimeNodeInstrumentation } from '@opentelemetry/instrumentation-runtime-node';
import {
  defaultResource,
  detectResources,
  envDetector,
  hostDetector,
  processDetector,
  resourceFromAttributes,
} from '@opentelemetry/resources';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, BatchSpanProcessor, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import { markMeterProviderInstalled, meterProviderForMetrics, prometheusExporter } from './metrics.js';
import { UrlRedactingSpanProcessor } from './url-redaction.js';

// The SDK's packages require the semantic conventions' CommonJS build; an `import` would load its ES build
// as well, a second copy of every constant (0.6 MB of a service's heap).
const { ATTR_SERVICE_NAME } = createRequire(import.meta.url)(
  '@opentelemetry/semantic-conventions',
) as typeof import('@opentelemetry/semantic-conventions');

/** What a started telemetry set-up is asked for: to flush and stop. */
export interface StartedTelemetry {
  shutdown(): Promise<void>;
}

let started: StartedTelemetry | undefined;

const noMetrics = { getMeter: () => createNoopMeter() };

/**
 * service-kit records `http.server.request.duration` itself, by route (the dashboards read that one,
 * scope `http`); the HTTP instrumentation's own histogram of the same name, recorded on every request
 * too, would be a second series nobody reads. Its spans stay.
 */
function withoutDuplicateHttpMetrics(instrumentations: Instrumentation[]) {
  for (const instrumentation of instrumentations)
    if (instrumentation.instrumentationName === '@opentelemetry/instrumentation-http')
      instrumentation.setMeterProvider(noMetrics);
}

/**
 * Starts tracing for this process. Spans are exported over OTLP/HTTP only when
 * OTEL_EXPORTER_OTLP_ENDPOINT is set; without it context still propagates (trace ids in logs and bus
 * headers) but nothing leaves the process. With OTEL_SDK_DISABLED=true there is no tracing at all, and the
 * metrics stay whole (`startMetricsOnly`).
 */
export function startTelemetry(serviceName = process.env.OTEL_SERVICE_NAME ?? 'inbox'): void {
  if (started) return;
  if (process.env.OTEL_SDK_DISABLED === 'true') {
    started = startMetricsOnly();
    return;
  }
  const exporting = Boolean(
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT || process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
  );
  started = startTracing(serviceName, exporting ? new OTLPTraceExporter() : undefined);
}

/**
 * The SDK's pieces, set up as the NodeSDK of `@opentelemetry/sdk-node` sets them up by default, without
 * the NodeSDK itself: it loads some 940 modules (every exporter of every protocol, the logs SDK) to use a
 * handful: 12 MiB of resident memory in an idle process, 7-18 under load (bench/RESULTS.md, 2026-11-26,
 * sixth session).
 * Read from the environment as the SDK reads it: the OTLP exporter's and the batch processor's settings,
 * the sampler and span limits (sdk-trace-base), the resource (`OTEL_SERVICE_NAME`,
 * `OTEL_RESOURCE_ATTRIBUTES`) and `OTEL_LOG_LEVEL`. Propagation is W3C trace context and baggage, the
 * SDK's default (`OTEL_PROPAGATORS` is not read).
 *
 * Exported so that tests trace exactly as production does. Spans pass the URL redaction before the
 * exporter's batch (credentials ride in some providers' URLs and in the subscription handshake's query);
 * without an exporter no tracer provider is installed at all.
 */
export function startTracing(serviceName: string, traceExporter: SpanExporter | undefined): StartedTelemetry {
  const logLevel = process.env.OTEL_LOG_LEVEL;
  if (logLevel) diag.setLogger(new DiagConsoleLogger(), { logLevel: diagLogLevelFromString(logLevel) });
  installContextManager();
  propagation.setGlobalPropagator(
    new CompositePropagator({ propagators: [new W3CTraceContextPropagator(), new W3CBaggagePropagator()] }),
  );
  const resource = defaultResource()
    .merge(detectResources({ detectors: [envDetector, processDetector, hostDetector] }))
    .merge(resourceFromAttributes({ [ATTR_SERVICE_NAME]: serviceName }));
  // Our metrics and the auto-instrumentations' are read through one Prometheus exporter, on /metrics.
  const meterProvider = new MeterProvider({ resource, readers: [prometheusExporter()] });
  metrics.setGlobalMeterProvider(meterProvider);
  const instrumentations = serviceInstrumentations();
  registerInstrumentations({ instrumentations, meterProvider });
  withoutDuplicateHttpMetrics(instrumentations);
  markMeterProviderInstalled();
  // The batch processor of sdk-trace-base reads the OTEL_BSP_* variables.
  const tracerProvider = traceExporter
    ? new BasicTracerProvider({
        resource,
        spanProcessors: [new UrlRedactingSpanProcessor(), new BatchSpanProcessor(traceExporter)],
      })
    : undefined;
  if (tracerProvider) trace.setGlobalTracerProvider(tracerProvider);
  return {
    shutdown: async () => {
      await Promise.all([tracerProvider?.shutdown(), meterProvider.shutdown()]);
    },
  };
}

/**
 * The active context follows the code through callbacks and promises. The metrics need it as much as the
 * spans: libs/db times the statements run inside an operation, which it knows by the operation's span in
 * the active context (a non-recording one when nothing is traced).
 */
function installContextManager(): void {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
}

/**
 * With the SDK disabled (OTEL_SDK_DISABLED=true): no tracer provider, no propagator and no HTTP
 * instrumentation, so no span is recorded and no trace context leaves the process. What the metrics read
 * stays: the context manager (without it no statement would belong to an operation, and
 * `db.client.operation.duration` would be empty) and the runtime gauges the dashboard reads, on the
 * metrics' own provider (metrics.ts).
 */
function startMetricsOnly(): StartedTelemetry {
  installContextManager();
  const runtime = runtimeInstrumentation();
  registerInstrumentations({ instrumentations: [runtime], meterProvider: meterProviderForMetrics() });
  return {
    shutdown: async () => {
      runtime.disable();
    },
  };
}

/**
 * Logs are pino's JSON lines on stdout, with trace ids from service-kit's mixin; there is no log provider
 * (a pino instrumentation would turn every line into an OTLP log record for a Collector that has no
 * pipeline for them).
 */
function serviceInstrumentations(): Instrumentation[] {
  // The auto-instrumentations for the libraries the services use, and only those: the package that
  // bundles all of them loads some forty, each hooking module loading, and puts 91 packages in an
  // image's tree.
  // Left out, on purpose: fs, dns and net (their spans drown the useful ones and cost time on every
  // request); amqplib (the bus makes its own messaging spans on every transport, and amqplib's patch
  // would add a second publish span and overwrite the traceparent header, re-parenting the consumer's
  // span under it); express and router (their wrappers around every layer cost a quarter of a refused
  // request's CPU, bench/RESULTS.md, for spans that tell no more than the HTTP server span, which
  // service-kit names by its route); pino (see above); ioredis (it needs the ESM loader hook, register.ts,
  // and with auto-pipelining the gateway's rate-limit commands leave outside any span, so it recorded none);
  // undici (every outgoing undici call is made by code of ours that traces it as a span of its own,
  // `withHttpClientSpan`: provider calls and webhook POSTs, bench/RESULTS.md, sixteenth session).
  return [
    // Outgoing node:http calls only: every HTTP server starts its span with traceIncoming
    // (server-span.ts), which costs a request a fraction of what the incoming side does.
    new HttpInstrumentation({ disableIncomingRequestInstrumentation: true }),
    runtimeInstrumentation(),
  ];
}

/**
 * `nodejs_eventloop_utilization`, which the dashboard reads, and the other runtime gauges. The event loop's
 * delay is sampled every 100 ms, not every 10 (the instrumentation's default): each sample is a timer
 * that wakes an idle process, and at 10 ms they cost an idle service 8.5-9.5 ms of CPU a second, 1.3 at
 * 100 ms (bench/RESULTS.md, seventeenth session). A stall still shows in `nodejs_eventloop_delay_max`, and
 * ten samples a second give the percentiles enough to go on between two scrapes.
 */
export function runtimeInstrumentation(): RuntimeNodeInstrumentation {
  return new RuntimeNodeInstrumentation({ monitoringPrecision: 100 });
}

/**
 * Flushes what is queued for export and stops, within `graceMs`: an unreachable collector must not
 * keep a stopping process past its shutdown budget.
 */
export async function stopTelemetry(graceMs = 2_000): Promise<void> {
  const stopping = started?.shutdown().catch(() => undefined);
  started = undefined;
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    stopping,
    new Promise<void>((resolve) => {
      timer = setTimeout(resolve, graceMs);
    }),
  ]);
  clearTimeout(timer);
}
