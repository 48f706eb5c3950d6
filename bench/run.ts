// `npm run bench`: every benchmark, one after the other (BENCH=send-message or BENCH=webhooks for one).
import { cpus, totalmem } from 'node:os';
import { benchSendMessage } from './send-message.js';
import { benchWebhooks } from './webhooks.js';

const which = process.env.BENCH ?? 'all';
console.log(
  `machine: ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`,
);
if (which === 'all' || which === 'send-message') await benchSendMessage();
if (which === 'all' || which === 'webhooks') {
  const figures = await benchWebhooks();
  console.log('\nsigned webhook deliveries, one dispatcher process, loopback receiver');
  for (const [label, value] of Object.entries(figures)) console.log(`${label.padEnd(30)} ${value}`);
}
