// Probes and scrapes are answered before the tracing and the access log: the kubelet and Prometheus call
// every pod every few seconds, and a trace and a log line each would bury the requests they are for.
import { NodeSDK } from '@opentelemetry/sdk-node';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createHttpApp, createLogger, finishHttpApp, listen, type RunningServer } from '../src/index.js';

const exporter = new InMemorySpanExporter();
const sdk = new NodeSDK({ spanProcessors: [new SimpleSpanProcessor(exporter)], instrumentations: [] });
const lines: string[] = [];
let server: RunningServer;

beforeAll(async () => {
  sdk.start();
  const logger = createLogger('test', { destination: { write: (line: string) => lines.push(line) } });
  const app = createHttpApp({ logger, readiness: { dependency: () => true } });
  app.post('/work', (_req, res) => {
    res.json({ done: true });
  });
  finishHttpApp(app, logger);
  server = await listen(app, 0, '127.0.0.1');
});

afterAll(async () => {
  await server.close();
  await sdk.shutdown();
});

it('traces and logs a request but not /healthz, /readyz or /metrics', async () => {
  for (const path of ['/healthz', '/readyz', '/metrics'])
    expect((await fetch(`${server.url}${path}`)).status, path).toBe(200);
  const work = await fetch(`${server.url}/work`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{}',
  });
  expect(work.status).toBe(200);
  expect(work.headers.get('x-request-id')).toBeTruthy();
  await new Promise((resolve) => setTimeout(resolve, 50));

  const spans = exporter.getFinishedSpans();
  expect(spans.map((span) => span.name)).toEqual(['POST /work']);
  const access = lines.map((line) => JSON.parse(line)).filter((entry) => entry.msg === 'request');
  expect(access.map((entry) => entry.route)).toEqual(['/work']);
});
