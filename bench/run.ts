// `npm run bench`: every benchmark, one after the other (BENCH=send-path or BENCH=webhooks for one; BUS=nats
// or BUS=rabbitmq for one broker). BENCH=spans, not part of every run: one send's spans through
// OpenTelemetry's pipeline, apart from the stack (span-pipeline.ts).
import { cpus, totalmem } from 'node:os';
import { benchBrokers } from './broker.js';
import { benchSendPath } from './send-path.js';
import { benchSpanPipeline } from './span-pipeline.js';
import { benchWebhooks } from './webhooks.js';

const which = process.env.BENCH ?? 'all';
console.log(
  `machine: ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`,
);
const brokers = benchBrokers();
if (which === 'all' || which === 'send-path') for (const broker of brokers) await benchSendPath(broker);
if (which === 'spans') await benchSpanPipeline(brokers[0]!);
if (which === 'all' || which === 'webhooks') {
  const figures = new Map<string, Record<string, string>>();
  for (const broker of brokers) figures.set(broker, await benchWebhooks(broker));
  console.log('\nsigned webhook deliveries, one dispatcher process, loopback receiver');
  console.log(`${''.padEnd(30)} ${brokers.map((b) => b.padEnd(28)).join(' ')}`);
  for (const label of Object.keys(figures.get(brokers[0]!)!))
    console.log(
      `${label.padEnd(30)} ${brokers.map((b) => (figures.get(b)![label] ?? '').padEnd(28)).join(' ')}`,
    );
}
