// The runtime instrumentation as the services set it up: the event loop's delay sampled every 100 ms
// (a 10 ms timer costs an idle service 8.5-9.5 ms of CPU a second), and its gauges still served.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { registerInstrumentations } from '@opentelemetry/instrumentation';
import { expect, it } from 'vitest';
import { meterProviderForMetrics, serveMetrics } from '../src/metrics.js';
import { runtimeInstrumentation } from '../src/sdk.js';

async function metricsText(): Promise<string> {
  const server = createServer(serveMetrics);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const { port } = server.address() as AddressInfo;
    return await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  } finally {
    server.close();
  }
}

it('samples the event loop delay every 100 ms and serves its gauges and the utilization', async () => {
  const runtime = runtimeInstrumentation();
  expect(runtime.getConfig().monitoringPrecision).toBe(100);
  registerInstrumentations({ instrumentations: [runtime], meterProvider: meterProviderForMetrics() });
  try {
    // The delay gauges are left out until five samples are in: half a second at this precision.
    let text = '';
    for (let attempt = 0; attempt < 50 && !/^nodejs_eventloop_delay_max\{/m.test(text); attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      text = await metricsText();
    }
    expect(text).toMatch(/^nodejs_eventloop_delay_max\{/m);
    expect(text).toMatch(/^nodejs_eventloop_delay_p99\{/m);
    expect(text).toMatch(/^nodejs_eventloop_utilization\w*\{/m);
  } finally {
    runtime.disable();
  }
});
