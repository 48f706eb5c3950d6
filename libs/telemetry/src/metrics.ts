import type { IncomingMessage, ServerResponse } from 'node:http';
import { type MeterProvider as ApiMeterProvider, type Meter, metrics } from '@opentelemetry/api';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { MeterProvider } from '@opentelemetry/sdk-metrics';

let exporter: PrometheusExporter | undefined;
let providerInstalled = false;

/**
 * One Prometheus reader per process, read through each service's own /metrics route rather than a
 * second HTTP port, so Kubernetes probes and scrapes share the service port.
 */
export function prometheusExporter(): PrometheusExporter {
  exporter ??= new PrometheusExporter({ preventServerStart: true });
  return exporter;
}

/** Called once the NodeSDK has installed its meter provider, which reads through the same exporter. */
export function markMeterProviderInstalled(): void {
  providerInstalled = true;
}

// Without the SDK (tests, all-in-one mode) a provider of our own carries the same exporter.
function ensureProvider(): void {
  if (providerInstalled) return;
  metrics.setGlobalMeterProvider(new MeterProvider({ readers: [prometheusExporter()] }));
  providerInstalled = true;
}

/** The meter provider our metrics are recorded on, the SDK's or our own. */
export function meterProviderForMetrics(): ApiMeterProvider {
  ensureProvider();
  return metrics.getMeterProvider();
}

export function meter(name = 'inbox'): Meter {
  ensureProvider();
  return metrics.getMeter(name);
}

export function serveMetrics(req: IncomingMessage, res: ServerResponse): void {
  ensureProvider();
  prometheusExporter().getMetricsRequestHandler(req, res);
}
