// What one send's spans cost OpenTelemetry's pipeline, apart from the stack they come from
// (`BENCH=spans`). A traced stack makes external sends for a few seconds, and the spans its services
// export are collected; one send's trace, of the size most sends have, is then replayed in a loop, in
// processes of their own, untraced, recorded (export dropped) and exported as shipped, the three taking
// turns. In a loop the figures move by a few percent between rounds, where a stack's pairs move by a fifth:
// they split the pipeline's own work into recording and export, and judge a change to it. What that work
// costs in a stack is another matter: there, work done inline with each request costs ten to twenty times
// its loop figure, and the export, done a batch at a time, about twice (bench/RESULTS.md, twenty-fifth
// session); a comparison of stacks (BENCH_TRACING=compare) tells that.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { tracer } from '@inbox/telemetry';
import { startProcess } from '@inbox/testkit';
import type { BenchBroker } from './broker.js';
import { startBenchStack } from './send-path.js';

type SpanOptions = NonNullable<Parameters<ReturnType<typeof tracer>['startSpan']>[1]>;

/** A span as a service exported it: enough to start one of the same shape. */
export interface ReplayedSpan {
  service: string;
  name: string;
  kind: NonNullable<SpanOptions['kind']>;
  attributes: NonNullable<SpanOptions['attributes']>;
}

const variants = {
  untraced: 'untraced (no SDK: the loop alone)',
  recorded: 'recorded (SDK and span processors, batches dropped)',
  exported: 'exported as shipped (OTLP/HTTP JSON to a sink)',
} as const;
type Variant = keyof typeof variants;

const rounds = Number(process.env.BENCH_ROUNDS ?? 4);
const sendsPerRun = Number(process.env.BENCH_SPAN_SENDS ?? 20_000);
/** What a run replays in all: a fifth more before it measures (span-replay.ts). */
const sendsReplayed = Math.ceil(sendsPerRun / 5) + sendsPerRun;

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
  arrayValue?: { values?: OtlpValue[] };
}

interface OtlpExport {
  resourceSpans?: Array<{
    resource?: { attributes?: Array<{ key: string; value: OtlpValue }> };
    scopeSpans?: Array<{
      spans?: Array<{
        traceId: string;
        name: string;
        kind: number;
        attributes?: Array<{ key: string; value: OtlpValue }>;
      }>;
    }>;
  }>;
}

function attributeValue(value: OtlpValue): string | number | boolean | string[] {
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.doubleValue !== undefined) return value.doubleValue;
  if (value.boolValue !== undefined) return value.boolValue;
  // An attribute's array is of one type; none of the spans' has any but strings.
  return (value.arrayValue?.values ?? []).map((item) => String(attributeValue(item)));
}

/** Adds an export's spans to their traces, each with its service. */
function collect(body: Buffer, traces: Map<string, ReplayedSpan[]>): void {
  const request = JSON.parse(body.toString()) as OtlpExport;
  for (const resourceSpans of request.resourceSpans ?? []) {
    const service = String(
      attributeValue(resourceSpans.resource?.attributes?.find((a) => a.key === 'service.name')?.value ?? {}),
    );
    for (const scope of resourceSpans.scopeSpans ?? [])
      for (const span of scope.spans ?? []) {
        const trace = traces.get(span.traceId) ?? [];
        traces.set(span.traceId, trace);
        trace.push({
          service,
          name: span.name,
          // OTLP counts kinds from 1 (0 is unspecified); the API from 0.
          kind: Math.max(0, span.kind - 1),
          attributes: Object.fromEntries(
            (span.attributes ?? []).map((a) => [a.key, attributeValue(a.value)]),
          ),
        });
      }
  }
}

/** One external send's trace with as many spans as most have, its server span first. */
function typicalSend(traces: Map<string, ReplayedSpan[]>): ReplayedSpan[] {
  const serverSpan = 'POST /api/external/messages/send';
  const sends = [...traces.values()].filter((trace) => trace.some((span) => span.name === serverSpan));
  if (sends.length === 0) throw new Error('no external send was traced');
  const bySize = new Map<number, number>();
  for (const send of sends) bySize.set(send.length, (bySize.get(send.length) ?? 0) + 1);
  const size = [...bySize].sort((a, b) => b[1] - a[1])[0]![0];
  const send = sends.find((trace) => trace.length === size)!;
  return [send.find((span) => span.name === serverSpan)!, ...send.filter((span) => span.name !== serverSpan)];
}

async function runReplay(spansFile: string, variant: Variant, sinkUrl: string): Promise<number> {
  let output = '';
  const child = startProcess(
    process.execPath,
    [
      '--conditions=source',
      '--import',
      'tsx',
      fileURLToPath(new URL('./span-replay.ts', import.meta.url)),
      spansFile,
      variant,
      String(sendsPerRun),
    ],
    {
      env: { ...process.env, OTEL_EXPORTER_OTLP_ENDPOINT: sinkUrl, OTEL_SDK_DISABLED: 'false' },
      onOutput: (chunk) => {
        output += chunk;
      },
    },
  );
  const code = await child.exited;
  const line = output.split('\n').find((text) => text.startsWith('{"microsPerSend"'));
  if (code !== 0 || !line) throw new Error(`the ${variant} replay exited with ${code}: ${output}`);
  return (JSON.parse(line) as { microsPerSend: number }).microsPerSend;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length / 2;
  return sorted.length % 2 ? sorted[Math.floor(middle)]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

export async function benchSpanPipeline(broker: BenchBroker): Promise<void> {
  const traces = new Map<string, ReplayedSpan[]>();
  const stack = await startBenchStack(broker, 'on', {
    ceilings: false,
    onTraces: (body) => collect(body, traces),
  });
  // The warm-up's sends; stopping flushes every service's last batch to the sink.
  try {
    await stack.warmUp();
  } finally {
    await stack.stop();
  }
  const send = typicalSend(traces);
  const dir = mkdtempSync(join(tmpdir(), 'span-pipeline-'));
  const spansFile = join(dir, 'send.json');
  writeFileSync(spansFile, JSON.stringify(send));
  let sunk = 0;
  const sink = createServer((req, res) => {
    req.on('data', (chunk: Buffer) => {
      sunk += chunk.length;
    });
    req.on('end', () => res.end('{}'));
  });
  await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve));
  const sinkUrl = `http://127.0.0.1:${(sink.address() as AddressInfo).port}`;
  const figures: Record<Variant, number[]> = { untraced: [], recorded: [], exported: [] };
  let exportedBytes = 0;
  try {
    const order = Object.keys(variants) as Variant[];
    for (let round = 0; round < rounds; round++)
      for (const variant of round % 2 ? [...order].reverse() : order) {
        const sunkBefore = sunk;
        figures[variant].push(await runReplay(spansFile, variant, sinkUrl));
        if (variant === 'exported') exportedBytes = Math.max(exportedBytes, sunk - sunkBefore);
      }
  } finally {
    sink.close();
    rmSync(dir, { recursive: true, force: true });
  }

  console.log(
    `\nspan pipeline (${broker}): one external send's ${send.length} spans, replayed ${sendsPerRun} times a run, ${rounds} rounds:`,
  );
  for (const span of send) console.log(`  ${span.service.padEnd(20)} ${span.name}`);
  console.log(`${'variant'.padEnd(54)} ${'µs per send, by round'.padEnd(36)} median  per span`);
  for (const variant of Object.keys(variants) as Variant[]) {
    const runs = figures[variant];
    const byRound = runs.map((us) => us.toFixed(1).padStart(7)).join(' ');
    const perSpan = median(runs) / send.length;
    console.log(
      `${variants[variant].padEnd(54)} ${byRound.padEnd(36)} ${median(runs).toFixed(1).padStart(6)}  ${perSpan.toFixed(2).padStart(8)}`,
    );
  }
  const untraced = median(figures.untraced);
  const recording = median(figures.recorded) - untraced;
  const exporting = median(figures.exported) - median(figures.recorded);
  console.log(
    `recording ${recording.toFixed(1)} µs a send, export ${exporting.toFixed(1)} (${((100 * exporting) / (recording + exporting)).toFixed(0)} % of the pipeline); ` +
      `${(exportedBytes / 1024 / sendsReplayed).toFixed(1)} KiB of OTLP JSON a send`,
  );
}
