import type { IncomingMessage, ServerResponse } from 'node:http';
import { type Meter, metrics } from '@opentelemetry/api';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { MeterProvider } from '@opentelemetry/sdk-metrics';

let exporter: PrometheusExporter | undefined;

// One meter provider per process, read by Prometheus through each service's own /metrics route rather
// than a second HTTP port, so Kubernetes probes and scrapes share the service port.
function ensureExporter(): PrometheusExporter {
  if (!exporter) {
    exporter = new PrometheusExporter({ preventServerStart: true });
    metrics.setGlobalMeterProvider(new MeterProvider({ readers: [exporter] }));
  }
  return exporter;
}

export function meter(name = 'inbox'): Meter {
  ensureExporter();
  return metrics.getMeter(name);
}

export function serveMetrics(req: IncomingMessage, res: ServerResponse): void {
  ensureExporter().getMetricsRequestHandler(req, res);
}
