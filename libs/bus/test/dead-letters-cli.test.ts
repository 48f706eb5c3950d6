import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { WireEvent } from '@inbox/contracts';
import { uniquePrefix, waitFor } from '@inbox/testkit';
import { expect, inject, it } from 'vitest';
import { NatsBus } from '../src/index.js';

const run = promisify(execFile);
const cli = fileURLToPath(new URL('../src/dead-letters-cli.ts', import.meta.url));

it("lists a durable's dead letters and puts them back, as an operator runs it", async () => {
  const url = inject('infra').natsUrl;
  const prefix = uniquePrefix();
  const bus = await NatsBus.connect({ url, prefix });
  try {
    let mended = false;
    const handled: string[] = [];
    await bus.consume({ durable: 'inbound', filter: '>', maxDeliver: 1 }, async (e) => {
      if (!mended) throw new Error('the database was down longer than the wait');
      handled.push(e.id);
    });
    const lost: WireEvent = {
      id: randomUUID(),
      type: 'message.sent',
      workspace_id: randomUUID(),
      occurred_at: new Date().toISOString(),
      data: {},
    };
    await bus.publish(lost);
    await waitFor(async () => (await bus.deadLetters('inbound')).length === 1, { what: 'the dead letter' });
    const operator = (...args: string[]) =>
      run(process.execPath, ['--conditions=source', '--import', 'tsx', cli, ...args], {
        env: { ...process.env, BUS_URL: url, BUS_PREFIX: prefix },
      });

    const listed = await operator('inbound');
    expect(
      listed.stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line)),
    ).toEqual([
      { durable: 'inbound', event: lost, error: 'the database was down longer than the wait', attempts: 1 },
    ]);
    mended = true;
    expect(JSON.parse((await operator('inbound', '--redrive')).stdout)).toEqual({
      durable: 'inbound',
      redriven: 1,
    });
    await waitFor(() => handled.length === 1, { what: 'the event handled' });
    expect(handled).toEqual([lost.id]);
    await expect(operator()).rejects.toMatchObject({ code: 2 });
  } finally {
    await bus.drain();
  }
});
