// An operator's look at a durable consumer's dead letters, and the way to put them back once what failed
// them is mended: `node libs/bus/dist/dead-letters-cli.js <durable> [--redrive] [--limit N]` in any
// service's image (`npm run dead-letters -- …` from a checkout), with a BUS_URL allowed to read the dead
// letters and publish events (on NATS with deploy/nats/nats-server.conf, the user `operator`'s; no
// service's may) and BUS_PREFIX where one is set.
import { parseArgs } from 'node:util';
import { connectBus } from './connect.js';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { redrive: { type: 'boolean', default: false }, limit: { type: 'string', default: '100' } },
});
const durable = positionals[0];
const limit = Number(values.limit);
const url = process.env.BUS_URL;
if (!durable || !url || !Number.isInteger(limit) || limit < 1) {
  process.stderr.write(
    'usage: BUS_URL=nats://… dead-letters <durable> [--redrive] [--limit N]\n' +
      "  lists up to N (100) of the durable consumer's dead letters, oldest first; with --redrive puts them\n" +
      '  back for it, each counted afresh\n',
  );
  process.exit(2);
}
const bus = await connectBus({ url, prefix: process.env.BUS_PREFIX ?? '', name: 'dead-letters' });
try {
  if (values.redrive) {
    process.stdout.write(`${JSON.stringify({ durable, redriven: await bus.redrive(durable, limit) })}\n`);
  } else {
    for (const letter of await bus.deadLetters(durable, limit))
      process.stdout.write(`${JSON.stringify(letter)}\n`);
  }
} finally {
  await bus.drain();
}
