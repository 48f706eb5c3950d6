import { randomUUID } from 'node:crypto';
import { NatsBus } from '@inbox/bus';
import { laneOf } from '@inbox/contracts';
import { createPool, type Pool } from '@inbox/db';
import { type HostedService, hostService, SecretBox } from '@inbox/service-kit';
import { createDatabase, uniquePrefix, waitFor } from '@inbox/testkit';
import { afterAll, expect, inject, it } from 'vitest';
import { dispatcherService } from '../src/index.js';
import { messageSent, type Receiver, receiver } from './support.js';

// One workspace's flood of webhook events against another workspace's one event, on the broker the
// dispatcher reads them from.

const hosted: HostedService[] = [];
const receivers: Receiver[] = [];
let bus: NatsBus | undefined;
let pool: Pool | undefined;
afterAll(async () => {
  await bus?.drain();
  for (const service of hosted) await service.stop();
  await pool?.end();
  await Promise.all(receivers.map((r) => r.close()));
});

/** A workspace id whose events take a lane other than `other`'s. */
function workspaceBeside(other?: string): string {
  for (;;) {
    const id = randomUUID();
    if (other === undefined || laneOf(id) !== laneOf(other)) return id;
  }
}

it("schedules a workspace's event while another workspace's backlog waits in its own lane", async () => {
  const { natsUrl, postgresAdminUrl } = inject('infra');
  const prefix = uniquePrefix();
  const databaseUrl = await createDatabase(postgresAdminUrl);
  const start = async () => {
    const service = await hostService(
      dispatcherService({ encryptionKey: SecretBox.generateKey(), allowedCidrs: '127.0.0.0/8', pollMs: 50 }),
      { databaseUrl, busUrl: natsUrl, busPrefix: prefix, port: 0, host: '127.0.0.1', logLevel: 'silent' },
    );
    hosted.push(service);
    return service;
  };
  // A first start declares the durables and takes the webhooks; the events then wait on the broker.
  const first = await start();
  bus = await NatsBus.connect({ url: natsUrl, prefix });
  pool = createPool({ url: databaseUrl, schema: 'dispatcher' });
  const target = await receiver();
  receivers.push(target);
  const flooding = workspaceBeside();
  const quiet = workspaceBeside(flooding);
  for (const workspace of [flooding, flooding, flooding, flooding, quiet])
    await bus.request('cmd.dispatcher.create-webhook', {
      workspace_id: workspace,
      url: target.url,
      events: ['*'],
    });
  await first.stop();

  const backlog = 2_000;
  for (let sent = 0; sent < backlog; sent += 200)
    await Promise.all(Array.from({ length: 200 }, () => bus!.publish(messageSent(flooding))));
  await bus.publish(messageSent(quiet));

  await start();
  const scheduled = async (workspace: string) => {
    const { rows } = await pool!.query<{ n: number }>(
      'select count(distinct event_id)::int as n from deliveries where workspace_id = $1',
      [workspace],
    );
    return rows[0]!.n;
  };
  await waitFor(async () => (await scheduled(quiet)) === 1, {
    what: "the quiet workspace's event",
    intervalMs: 5,
  });
  // In one queue it came after the whole backlog; in its own lane, after a statement or two of it.
  expect(await scheduled(flooding)).toBeLessThan(backlog / 2);
  await waitFor(async () => (await scheduled(flooding)) === backlog, {
    what: 'the backlog, scheduled too',
    timeoutMs: 60_000,
  });
}, 120_000);
