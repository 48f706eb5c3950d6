import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serveMetrics } from '@inbox/telemetry';

/** This process's /metrics, as a scrape reads it. */
export async function metricsText(): Promise<string> {
  const server = createServer(serveMetrics);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const { port } = server.address() as AddressInfo;
    return await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  } finally {
    server.close();
  }
}
