// How fast the host runs a fixed piece of work right now, in a process of its own beside the stack: every
// 50 ms one unit (JSON, a hash, a Map, strings and short-lived objects, about a millisecond of a service's
// kind of work), and a line on stdout with the time and the CPU microseconds it took. A load's CPU per
// request read beside the units of the same seconds can be told apart from the host slowing down.
import { createHash } from 'node:crypto';

const record = {
  id: '00000000-0000-4000-8000-000000000000',
  workspace_id: '11111111-1111-4111-8111-111111111111',
  text: 'a message of a usual length, with a few words in it and nothing else of note',
  items: Array.from({ length: 20 }, (_, index) => ({ index, name: `item ${index}`, on: index % 2 === 0 })),
};

function unit(): number {
  let checksum = 0;
  for (let round = 0; round < 40; round++) {
    const text = JSON.stringify({ ...record, round });
    const copy = JSON.parse(text) as typeof record;
    const seen = new Map<string, number>();
    for (const item of copy.items) seen.set(`${item.name}:${round}`, item.index);
    checksum += seen.size + createHash('sha256').update(text).digest()[0]!;
  }
  return checksum;
}

let sink = 0;
setInterval(() => {
  const before = process.cpuUsage();
  sink += unit();
  const used = process.cpuUsage(before);
  process.stdout.write(`${Date.now()} ${used.user + used.system}\n`);
}, 50);
process.on('SIGTERM', () => process.exit(sink === -1 ? 1 : 0));
