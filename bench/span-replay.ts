// One run of the span pipeline bench (span-pipeline.ts), in a process of its own so that its CPU is the
// pipeline's alone: the spans of one recorded send, replayed `sends` times through OpenTelemetry set up as a
// service sets it up, and the process's CPU microseconds per send printed as JSON.
//
//   node --conditions=source --import tsx bench/span-replay.ts <spans.json> <variant> <sends>
//
// Variants: `untraced` (no SDK: the API's no-op tracer, the loop's own cost), `recorded` (the SDK and its
// span processors, the batch handed to an exporter that drops it), `exported` (as shipped: startTelemetry
// with OTEL_EXPORTER_OTLP_ENDPOINT, OTLP/HTTP JSON to the bench's sink).
import { readFileSync } from 'node:fs';
import { startTelemetry, stopTelemetry, tracer } from '@inbox/telemetry';
import { startTracing } from '../libs/telemetry/src/sdk.js';
import type { ReplayedSpan } from './span-pipeline.js';

const [spansFile, variant, sendsArg] = process.argv.slice(2);
const spans = JSON.parse(readFileSync(spansFile!, 'utf8')) as ReplayedSpan[];
const sends = Number(sendsArg);

if (variant === 'recorded')
  startTracing('span-replay', {
    // ExportResultCode.SUCCESS.
    export: (_spans, done) => done({ code: 0 }),
    shutdown: async () => undefined,
  });
else if (variant === 'exported') startTelemetry('span-replay');
else if (variant !== 'untraced') throw new Error(`unknown variant ${variant}`);

const [first, ...rest] = spans;

/** One send's spans, in one trace: the first (the gateway's server span) as its root, the others under it. */
function replayOneSend(): void {
  tracer().startActiveSpan(first!.name, { kind: first!.kind, attributes: first!.attributes }, (root) => {
    for (const span of rest)
      tracer().startSpan(span.name, { kind: span.kind, attributes: span.attributes }).end();
    root.end();
  });
}

/** A few sends per turn, as a service spreads them, so that the exporter's requests go out meanwhile. */
async function replay(count: number): Promise<void> {
  for (let i = 0; i < count; i++) {
    replayOneSend();
    if (i % 4 === 3) await new Promise((resolve) => setImmediate(resolve));
  }
}

// Warm: the SDK's code optimised and its first batches out before anything is measured.
await replay(Math.ceil(sends / 5));
await new Promise((resolve) => setTimeout(resolve, 200));
const before = process.cpuUsage();
await replay(sends);
const used = process.cpuUsage(before);
console.log(JSON.stringify({ microsPerSend: (used.user + used.system) / sends }));
await stopTelemetry();
