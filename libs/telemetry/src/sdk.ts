import { createNoopMeter } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { RuntimeNodeInstrumentation } from '@opentelemetry/instrumentation-runtime-node';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import { NodeSDK, type NodeSDKConfiguration } from '@opentelemetry/sdk-node';
import { BatchSpanProcessor, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import { markMeterProviderInstalled, prometheusExporter } from './metrics.js';
import { UrlRedactingSpanProcessor } from './url-redaction.js';

let sdk: NodeSDK | undefined;

const noMetrics = { getMeter: () => createNoopMeter() };

/**
 * service-kit records `http.server.request.duration` itself, by route (the dashboards read that one,
 * scope `http`); the HTTP instrumentation's own histogram of the same name, recorded on every request
 * too, would be a second series nobody reads. Its spans stay.
 */
function withoutDuplicateHttpMetrics(
  instrumentations: NonNullable<NodeSDKConfiguration['instrumentations']>,
) {
  for (const instrumentation of instrumentations.flat())
    if (instrumentation.instrumentationName === '@opentelemetry/instrumentation-http')
      instrumentation.setMeterProvider(noMetrics);
}

/**
 * Starts tracing for this process. Spans are exported over OTLP/HTTP only when
 * OTEL_EXPORTER_OTLP_ENDPOINT is set; without it context still propagates (trace ids in logs and bus
 * headers) but nothing leaves the process.
 */
export function startTelemetry(serviceName = process.env.OTEL_SERVICE_NAME ?? 'inbox'): void {
  if (sdk || process.env.OTEL_SDK_DISABLED === 'true') return;
  const exporting = Boolean(
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT || process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
  );
  const configuration = sdkConfiguration(serviceName, exporting ? new OTLPTraceExporter() : undefined);
  sdk = new NodeSDK(configuration);
  sdk.start();
  withoutDuplicateHttpMetrics(configuration.instrumentations ?? []);
  markMeterProviderInstalled();
}

/**
 * The SDK's whole configuration, exported so that tests trace exactly as production does. Spans pass
 * the URL redaction before the exporter's batch (credentials ride in some providers' URLs and in the
 * subscription handshake's query); without an exporter no tracer provider is installed at all.
 */
export function sdkConfiguration(
  serviceName: string,
  traceExporter: SpanExporter | undefined,
): Partial<NodeSDKConfiguration> {
  return {
    serviceName,
    // The SDK's meter provider reads through our Prometheus exporter, so the auto-instrumentations'
    // metrics and ours are served together on /metrics.
    metricReader: prometheusExporter(),
    // The batch processor of sdk-trace-base reads the OTEL_BSP_* variables, as the SDK's own would.
    spanProcessors: traceExporter
      ? [new UrlRedactingSpanProcessor(), new BatchSpanProcessor(traceExporter)]
      : [],
    // Logs are pino's JSON lines on stdout, with trace ids from service-kit's mixin. The pino
    // instrumentation would also turn every line into an OTLP log record for an exporter the SDK sets up
    // by default, which the Collector has no pipeline for: a second copy of each line, serialised and
    // sent to nowhere. No log record processor, and no pino instrumentation.
    logRecordProcessors: [],
    // The auto-instrumentations for the libraries the services use, and only those: the package that
    // bundles all of them loads some forty, each hooking module loading, and puts 91 packages in an
    // image's tree.
    // Left out, on purpose: fs, dns and net (their spans drown the useful ones and cost time on every
    // request); amqplib (the bus makes its own messaging spans on every transport, and amqplib's patch
    // would add a second publish span and overwrite the traceparent header, re-parenting the consumer's
    // span under it); express and router (their wrappers around every layer cost a quarter of a refused
    // request's CPU, bench/RESULTS.md, for spans that tell no more than the HTTP server span, which
    // service-kit names by its route); pino (see above); ioredis (it needs the ESM loader hook, register.ts,
    // and with auto-pipelining the gateway's rate-limit commands leave outside any span, so it recorded none).
    instrumentations: [
      // Outgoing node:http calls only: every HTTP server starts its span with traceIncoming
      // (server-span.ts), which costs a request a fraction of what the incoming side does.
      new HttpInstrumentation({ disableIncomingRequestInstrumentation: true }),
      // fetch: provider calls and webhook POSTs.
      new UndiciInstrumentation(),
      // Queries outside any operation (pool checks, relay polls) would each start a trace of their own.
      // Checking a client out of the pool is not a round trip worth a span of its own.
      new PgInstrumentation({ requireParentSpan: true, ignoreConnectSpans: true }),
      // nodejs_eventloop_utilization and the other runtime gauges the dashboard reads.
      new RuntimeNodeInstrumentation(),
    ],
  };
}

/**
 * Flushes what is queued for export and stops, within `graceMs`: an unreachable collector must not
 * keep a stopping process past its shutdown budget.
 */
export async function stopTelemetry(graceMs = 2_000): Promise<void> {
  const stopping = sdk?.shutdown().catch(() => undefined);
  sdk = undefined;
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    stopping,
    new Promise<void>((resolve) => {
      timer = setTimeout(resolve, graceMs);
    }),
  ]);
  clearTimeout(timer);
}
