// Tracing turned off (OTEL_SDK_DISABLED=true) is no reason for the metrics to go blind: a process of its
// own, started as the services are, with the SDK disabled.
import { fileURLToPath } from 'node:url';
import { createDatabase, startProcess } from '@inbox/testkit';
import { expect, inject, it } from 'vitest';

it('times the statements of an operation with the SDK disabled, and traces nothing', async () => {
  const url = await createDatabase(inject('infra').postgresAdminUrl);
  const fixture = fileURLToPath(new URL('./fixtures/statements-sdk-disabled.ts', import.meta.url));
  const child = startProcess(
    process.execPath,
    ['--conditions=source', '--import', 'tsx', '--import', '@inbox/telemetry/register', fixture],
    {
      env: { ...process.env, DATABASE_URL: url, OTEL_SDK_DISABLED: 'true', OTEL_EXPORTER_OTLP_ENDPOINT: '' },
    },
  );
  expect(await child.exited, child.output()).toBe(0);
  const lines = child.output().split('\n');
  const inOperation = lines.find((line) => line.startsWith('{"traceIds"'));
  // No span recorded and no context to carry: tracing is off.
  expect(JSON.parse(inOperation!), child.output()).toEqual({ traceIds: null, carried: {} });
  // The two statements run in the operation, and neither the one outsideSpans runs nor the one after it.
  const counted = lines.find(
    (line) =>
      line.startsWith('db_client_operation_duration_count{') && line.includes('db_operation_name="SELECT"'),
  );
  expect(counted, child.output()).toBeDefined();
  expect(Number(counted!.slice(counted!.lastIndexOf(' ') + 1))).toBe(2);
  // The runtime gauges the dashboard reads are there too.
  expect(lines.some((line) => line.startsWith('nodejs_eventloop_utilization'))).toBe(true);
});
