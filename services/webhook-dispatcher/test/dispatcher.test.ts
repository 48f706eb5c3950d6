import { createHmac, randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { NatsBus } from '@inbox/bus';
import { endpointsPerWorkspace, platformTexts } from '@inbox/contracts';
import { createPool, migrate } from '@inbox/db';
import { AddressPolicy, guardedAgent } from '@inbox/outbound-http';
import { createLogger, type HostedService, hostService, SecretBox } from '@inbox/service-kit';
import { createDatabase, uniquePrefix, waitFor } from '@inbox/testkit';
import { Webhook } from 'standardwebhooks';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { webhooks } from '../src/handlers/endpoints.js';
import { dispatcherService } from '../src/index.js';
import { DeliveryStore } from '../src/store/deliveries.js';
import { EndpointStore } from '../src/store/endpoints.js';
import { type Hit, messageSent, type Receiver, receiver } from './support.js';

let dispatcher: HostedService;
let bus: NatsBus;
let databaseUrl: string;
const receivers: Receiver[] = [];
const workspace = randomUUID();
// Long enough that the out-of-order test's events all arrive within it, even on a loaded machine.
const orderingGapWaitMs = 4_000;

beforeAll(async () => {
  const { natsUrl, postgresAdminUrl } = inject('infra');
  const prefix = uniquePrefix();
  databaseUrl = await createDatabase(postgresAdminUrl);
  dispatcher = await hostService(
    dispatcherService({
      encryptionKey: SecretBox.generateKey(),
      allowedCidrs: '127.0.0.0/8',
      timeoutMs: 800,
      retrySchedule: '1,1,1',
      pollMs: 100,
      orderingGapWaitMs,
      // Every body sent here is read from the event's one copy (the tenant-isolation suite runs with
      // the default, a copy in each delivery as well).
      bodyCopies: 'once',
    }),
    {
      databaseUrl,
      busUrl: natsUrl,
      busPrefix: prefix,
      port: 0,
      host: '127.0.0.1',
      logLevel: process.env.TEST_LOG_LEVEL ?? 'silent',
    },
  );
  bus = await NatsBus.connect({ url: natsUrl, prefix });
});
afterAll(async () => {
  await bus?.drain();
  await dispatcher?.stop();
  await Promise.all(receivers.map((r) => r.close()));
});

async function endpoint(
  target: Receiver,
  options: { events?: string[]; secret?: string; ordered?: boolean } = {},
) {
  return bus.request('cmd.dispatcher.create-webhook', {
    workspace_id: workspace,
    url: target.url,
    events: options.events ?? ['*'],
    secret: options.secret,
    ordered: options.ordered,
  });
}

async function newReceiver(answer?: Parameters<typeof receiver>[0]) {
  const r = await receiver(answer);
  receivers.push(r);
  return r;
}

const deliveriesOf = (webhookId: string) =>
  bus.request('cmd.dispatcher.list-deliveries', {
    workspace_id: workspace,
    webhook_id: webhookId,
    limit: 100,
  });

describe('delivery', () => {
  it('sends the spec headers, the legacy twins, X-Webhook-Id and the Standard Webhooks trio; signs the raw body', async () => {
    const signed = await newReceiver();
    const unsigned = await newReceiver();
    await endpoint(signed, { secret: 's3cret' });
    await endpoint(unsigned);
    const event = messageSent(workspace);
    await bus.publish(event);
    await waitFor(() => signed.hits.length === 1 && unsigned.hits.length === 1, { what: 'both deliveries' });
    const [hit] = signed.hits;
    const h = hit!.headers;
    expect(hit!.body).toBe(JSON.stringify(event.data));
    expect(h['content-type']).toBe('application/json');
    expect(h['user-agent']).toBe('Webhooks/1.0');
    expect(h['x-webhook-event']).toBe('message.sent');
    expect(h['x-legacy-event']).toBe('message.sent');
    expect(h['x-webhook-timestamp']).toMatch(/^\d{10}$/);
    expect(h['x-legacy-timestamp']).toBe(h['x-webhook-timestamp']);
    expect(h['x-webhook-id']).toBe(event.id);
    const expected = `sha256=${createHmac('sha256', 's3cret').update(hit!.body).digest('hex')}`;
    expect(h['x-webhook-signature']).toBe(expected);
    expect(h['x-legacy-signature']).toBe(expected);
    expect(h['webhook-id']).toBe(event.id);
    expect(h['webhook-timestamp']).toBe(h['x-webhook-timestamp']);
    const standard = createHmac('sha256', 's3cret')
      .update(`${event.id}.${h['webhook-timestamp']}.${hit!.body}`)
      .digest('base64');
    expect(h['webhook-signature']).toBe(`v1,${standard}`);
    const plain = unsigned.hits[0]!.headers;
    for (const header of ['x-webhook-signature', 'x-legacy-signature', 'webhook-signature'])
      expect(plain).not.toHaveProperty(header);
  });

  it('never posts a delivery whose event body is missing: it fails at once', async () => {
    const target = await newReceiver();
    const hook = await endpoint(target);
    // A delivery with no body of its own and none stored for its event (what a race with the body
    // pruner could leave, at worst).
    const pool = createPool({ url: databaseUrl, schema: 'dispatcher' });
    await pool.query(
      `insert into deliveries (id, workspace_id, endpoint_id, event_id, event_type, body, ordering_seq, trace_context, status, next_attempt_at)
       values (gen_random_uuid(), $1, $2, gen_random_uuid(), 'message.sent', null, 0, '{}', 'pending', now())`,
      [workspace, hook.id],
    );
    await pool.end();
    const failed = await waitFor(
      async () => {
        const listed = await deliveriesOf(hook.id);
        return listed.deliveries.find((delivery) => delivery.status === 'failed');
      },
      { what: 'the delivery failed' },
    );
    expect(failed.last_error).toBe('event body missing');
    expect(target.hits).toHaveLength(0);
  });

  it('delivers only the events an endpoint subscribed to', async () => {
    const onlyReceived = await newReceiver();
    await endpoint(onlyReceived, { events: ['message.received'] });
    const all = await newReceiver();
    await endpoint(all);
    await bus.publish(messageSent(workspace));
    await waitFor(() => all.hits.length === 1, { what: 'the subscribed-to-all endpoint' });
    // Another workspace's event reaches neither.
    await bus.publish(messageSent(randomUUID()));
    const marker = messageSent(workspace);
    await bus.publish(marker);
    await waitFor(() => all.hits.length === 2, { what: 'the marker' });
    expect(onlyReceived.hits).toHaveLength(0);
  });

  it('retries on the schedule until it succeeds, with the same id and body every time', async () => {
    const flaky = await newReceiver((_hit, res, index) => {
      res.statusCode = index < 2 ? 500 : 200;
      res.end(index < 2 ? 'not yet' : 'ok');
    });
    const hook = await endpoint(flaky, { secret: 'k' });
    await bus.publish(messageSent(workspace));
    await waitFor(() => flaky.hits.length === 3, { what: 'three attempts', timeoutMs: 15_000 });
    expect(new Set(flaky.hits.map((hit) => hit.headers['x-webhook-id'])).size).toBe(1);
    expect(new Set(flaky.hits.map((hit) => hit.body)).size).toBe(1);
    const { deliveries } = await waitFor(
      async () => {
        const found = await deliveriesOf(hook.id);
        return found.deliveries[0]?.status === 'delivered' ? found : undefined;
      },
      { what: 'delivered' },
    );
    const detail = await bus.request('cmd.dispatcher.get-delivery', {
      workspace_id: workspace,
      webhook_id: hook.id,
      delivery_id: deliveries[0]!.id,
    });
    expect(detail.attempts.map((a) => [a.attempt, a.status_code, a.response_body])).toEqual([
      [1, 500, 'not yet'],
      [2, 500, 'not yet'],
      [3, 200, 'ok'],
    ]);
    // The schedule's 1 s (±20 %) separates the attempts.
    const gap = flaky.hits[1]!.at - flaky.hits[0]!.at;
    expect(gap).toBeGreaterThanOrEqual(700);
  });

  it('honours Retry-After on 429 within [delay, 2 × delay]', async () => {
    const busy = await newReceiver((_hit, res, index) => {
      if (index === 0) {
        res.writeHead(429, { 'retry-after': '30' });
        res.end();
      } else res.end('ok');
    });
    const hook = await endpoint(busy);
    await bus.publish(messageSent(workspace));
    const delivery = await waitFor(
      async () =>
        (await deliveriesOf(hook.id)).deliveries.find(
          (d) => d.status === 'pending' && d.attempt_count === 1 && d.last_error,
        ),
      { what: 'the scheduled retry' },
    );
    const detail = await bus.request('cmd.dispatcher.get-delivery', {
      workspace_id: workspace,
      webhook_id: hook.id,
      delivery_id: delivery.id,
    });
    const waited = (Date.parse(delivery.next_attempt_at!) - Date.parse(detail.attempts[0]!.at)) / 1000;
    // Retry-After said 30 s; the schedule's delay is 1 s, so the wait is capped at 2 s.
    expect(waited).toBeGreaterThanOrEqual(1.5);
    expect(waited).toBeLessThanOrEqual(2.5);
  });

  it('disables the endpoint on 410 and stops delivering to it', async () => {
    const gone = await newReceiver((_hit, res) => {
      res.statusCode = 410;
      res.end();
    });
    const hook = await endpoint(gone);
    await bus.publish(messageSent(workspace));
    const disabled = await waitFor(
      async () => {
        const read = await bus.request('cmd.dispatcher.get-webhook', {
          workspace_id: workspace,
          webhook_id: hook.id,
        });
        return read.enabled ? undefined : read;
      },
      { what: 'the endpoint to be disabled' },
    );
    expect(disabled.disabled_reason).toMatch(/410/);
    expect((await deliveriesOf(hook.id)).deliveries[0]).toMatchObject({ status: 'failed' });
    const marker = await newReceiver();
    await endpoint(marker);
    const later = messageSent(workspace);
    await bus.publish(later);
    await waitFor(() => marker.hits.some((hit) => hit.headers['x-webhook-id'] === later.id), {
      what: 'a later event elsewhere',
    });
    expect(gone.hits).toHaveLength(1);
  });

  it('ends an attempt at WEBHOOK_TIMEOUT_MS and retries it', async () => {
    const silent = await newReceiver(() => undefined);
    const hook = await endpoint(silent);
    await bus.publish(messageSent(workspace));
    const delivery = await waitFor(
      async () =>
        (await deliveriesOf(hook.id)).deliveries.find(
          (d) => d.attempt_count >= 1 && d.status === 'pending' && d.last_error,
        ),
      {
        what: 'a timed-out attempt',
      },
    );
    expect(delivery.last_error).toMatch(/timed out after 800 ms/);
  });

  it('holds later events of a conversation behind a failing one on an ordered endpoint, and only those', async () => {
    const conversation = randomUUID();
    const other = randomUUID();
    let failuresLeft = 2;
    const ordered = await newReceiver((hit, res) => {
      const text = (JSON.parse(hit.body) as { message: { text: string } }).message.text;
      if (text === 'first' && failuresLeft > 0) {
        failuresLeft--;
        res.statusCode = 500;
      }
      res.end();
    });
    await endpoint(ordered, { ordered: true });
    for (const [conv, text] of [
      [conversation, 'first'],
      [conversation, 'second'],
      [conversation, 'third'],
      [other, 'elsewhere'],
    ] as const) {
      await bus.publish(messageSent(workspace, conv, text));
    }
    await waitFor(() => ordered.hits.filter((h) => h.headers['x-webhook-event']).length >= 6, {
      what: 'all deliveries',
      timeoutMs: 15_000,
    });
    const texts = ordered.hits.map(
      (hit) => (JSON.parse(hit.body) as { message: { text: string } }).message.text,
    );
    const ofConversation = texts.filter((t) => t !== 'elsewhere');
    expect(ofConversation).toEqual(['first', 'first', 'first', 'second', 'third']);
    // The other conversation was not held back by the failing one.
    expect(texts.indexOf('elsewhere')).toBeLessThan(texts.lastIndexOf('first'));
  });

  it('delivers a conversation in its sequence order on an ordered endpoint, whatever order the broker brings', async () => {
    const conversation = randomUUID();
    const ordered = await newReceiver();
    const unordered = await newReceiver();
    await endpoint(ordered, { ordered: true });
    await endpoint(unordered);
    const textOf = (hit: { body: string }) =>
      (JSON.parse(hit.body) as { message: { text: string } }).message.text;
    // As a redelivery after a crash would bring them: the later ones first.
    await bus.publish(messageSent(workspace, conversation, 'third', 3));
    await bus.publish(messageSent(workspace, conversation, 'second', 2));
    await waitFor(() => unordered.hits.length === 2, { what: 'the unordered endpoint to get both at once' });
    expect(ordered.hits).toHaveLength(0);
    await bus.publish(messageSent(workspace, conversation, 'first', 1));
    await waitFor(() => ordered.hits.length === 3, { what: 'the ordered endpoint to get all three' });
    expect(ordered.hits.map(textOf)).toEqual(['first', 'second', 'third']);
    expect(unordered.hits.map(textOf).sort()).toEqual(['first', 'second', 'third']);
  });

  it('stops holding a conversation behind an event that never comes once the gap wait is over', async () => {
    const conversation = randomUUID();
    const ordered = await newReceiver();
    const hook = await endpoint(ordered, { ordered: true });
    // Number 1 was dead-lettered before the dispatcher scheduled it: only 2 ever arrives.
    await bus.publish(messageSent(workspace, conversation, 'second', 2));
    const delivery = await waitFor(
      async () => (await deliveriesOf(hook.id)).deliveries.find((d) => d.status === 'delivered'),
      { what: 'the delivery past the gap', timeoutMs: 15_000 },
    );
    expect(ordered.hits).toHaveLength(1);
    expect(Date.parse(delivery.delivered_at!) - Date.parse(delivery.created_at)).toBeGreaterThanOrEqual(
      orderingGapWaitMs - 100,
    );
  });

  it('resends one delivery and replays every failed one since a time', async () => {
    let healthy = false;
    const sometimes = await newReceiver((_hit, res) => {
      res.statusCode = healthy ? 200 : 500;
      res.end();
    });
    const hook = await endpoint(sometimes);
    const since = new Date(Date.now() - 1_000).toISOString();
    await bus.publish(messageSent(workspace));
    await bus.publish(messageSent(workspace));
    // Three delays of about a second: four attempts each, then failed.
    await waitFor(
      async () => {
        const { deliveries } = await deliveriesOf(hook.id);
        return deliveries.length === 2 && deliveries.every((d) => d.status === 'failed');
      },
      { what: 'both deliveries to give up', timeoutMs: 20_000 },
    );
    const failedHits = sometimes.hits.length;
    expect(failedHits).toBe(8);

    healthy = true;
    const replayed = await bus.request('cmd.dispatcher.replay-failed', {
      workspace_id: workspace,
      webhook_id: hook.id,
      since,
    });
    expect(replayed.scheduled).toBe(2);
    await waitFor(
      async () => (await deliveriesOf(hook.id)).deliveries.every((d) => d.status === 'delivered'),
      { what: 'replayed' },
    );

    const [one] = (await deliveriesOf(hook.id)).deliveries;
    await bus.request('cmd.dispatcher.resend-delivery', {
      workspace_id: workspace,
      webhook_id: hook.id,
      delivery_id: one!.id,
    });
    await waitFor(() => sometimes.hits.length === failedHits + 3, { what: 'the resend' });
    expect(sometimes.hits.at(-1)!.headers['x-webhook-id']).toBe(one!.event_id);
    const detail = await bus.request('cmd.dispatcher.get-delivery', {
      workspace_id: workspace,
      webhook_id: hook.id,
      delivery_id: one!.id,
    });
    expect(detail.attempts).toHaveLength(6);
  });

  it('disables an endpoint that has failed for WEBHOOK_DISABLE_AFTER_HOURS without a success', async () => {
    const failing = await newReceiver((_hit, res) => {
      res.statusCode = 500;
      res.end();
    });
    const hook = await endpoint(failing);
    const pool = createPool({ url: databaseUrl, schema: 'dispatcher' });
    await pool.query("update endpoints set failing_since = now() - interval '121 hours' where id = $1", [
      hook.id,
    ]);
    await pool.end();
    await bus.publish(messageSent(workspace));
    const disabled = await waitFor(
      async () => {
        const read = await bus.request('cmd.dispatcher.get-webhook', {
          workspace_id: workspace,
          webhook_id: hook.id,
        });
        return read.enabled ? undefined : read;
      },
      { what: 'the endpoint to be disabled' },
    );
    expect(disabled.disabled_reason).toMatch(/no successful delivery for 120 hours/);
    const metrics = await (await fetch(`${dispatcher.http.url}/metrics`)).text();
    expect(metrics).toMatch(/webhook_endpoints_disabled_total\{reason="failing"\S* [1-9]/);
    expect(metrics).toMatch(/webhook_deliveries_total\{outcome="delivered"\S* [1-9]/);
  });
});

describe('per-endpoint rate limit', () => {
  it('starts no more than max_per_second attempts in any second to that endpoint', async () => {
    const limited = await newReceiver();
    const hook = await bus.request('cmd.dispatcher.create-webhook', {
      workspace_id: workspace,
      url: limited.url,
      events: ['message.received'],
      max_per_second: 2,
    });
    expect(hook.max_per_second).toBe(2);
    for (let i = 0; i < 6; i++) {
      const event = messageSent(workspace);
      await bus.publish({
        ...event,
        type: 'message.received',
        data: { ...(event.data as object), event: 'message.received' },
      });
    }
    await waitFor(() => limited.hits.length === 6, { what: 'all six, paced', timeoutMs: 15_000 });
    // The limit is on starts, which the attempt log dates: an arrival adds the machine's jitter (a loaded
    // CI runner delayed the first pair's by over 100 ms). Unpaced, all six start within milliseconds.
    // An attempt is recorded after its answer arrives (with the others of its batch), so the last ones
    // may reach the receiver a moment before the log.
    const pool = createPool({ url: databaseUrl, schema: 'dispatcher' });
    let starts: number[] = [];
    await waitFor(
      async () => {
        const { rows } = await pool.query<{ at: Date }>(
          'select at from attempts where endpoint_id = $1 order by at',
          [hook.id],
        );
        starts = rows.map((row) => row.at.getTime());
        return starts.length === 6;
      },
      { what: 'all six attempts recorded' },
    );
    await pool.end();
    // A second's window, less the milliseconds between a lease's clock and its attempts' start.
    for (const start of starts)
      expect(starts.filter((t) => t >= start && t < start + 950).length).toBeLessThanOrEqual(2);
    // And the receiver saw them paced too: three pairs take two seconds, give or take that jitter.
    const arrivals = limited.hits.map((hit) => hit.at).sort((a, b) => a - b);
    expect(arrivals.at(-1)! - arrivals[0]!).toBeGreaterThan(1_500);
  });
});

describe('secret rotation', () => {
  // Its own workspace, so the receiver gets only the events published here.
  const ws = randomUUID();
  const hours = 3_600_000;
  // Whether a Standard Webhooks library verifies, given the secret keyed with its UTF-8 bytes (any
  // secret, as receivers were told before @inbox/sdk) or, with `asGiven`, a whsec_ secret as it is.
  const referenceVerifies = (secret: string, hit: Hit, asGiven = false) => {
    try {
      new Webhook(asGiven ? secret : `whsec_${Buffer.from(secret).toString('base64')}`).verify(
        hit.body,
        hit.headers as Record<string, string>,
      );
      return true;
    } catch {
      return false;
    }
  };
  const specSignature = (secret: string, hit: Hit) =>
    `sha256=${createHmac('sha256', secret).update(hit.body).digest('hex')}`;

  async function deliverOne(target: Receiver): Promise<Hit> {
    const event = messageSent(ws);
    await bus.publish(event);
    return waitFor(() => target.hits.find((hit) => hit.headers['x-webhook-id'] === event.id), {
      what: 'the delivery',
    });
  }

  it('signs with the new and the replaced secret through the grace period, then with the new one only', async () => {
    const target = await newReceiver();
    const hook = await bus.request('cmd.dispatcher.create-webhook', {
      workspace_id: ws,
      url: target.url,
      events: ['*'],
      secret: 'old-secret',
    });
    expect(hook.previous_secret_expires_at).toBeNull();
    const before = Date.now();
    const rotated = await bus.request('cmd.dispatcher.rotate-secret', {
      workspace_id: ws,
      webhook_id: hook.id,
    });
    // The test dispatcher leaves WEBHOOK_SECRET_GRACE_HOURS at its default, 24.
    const expiresIn = Date.parse(rotated.previous_secret_expires_at!) - before;
    expect(expiresIn).toBeGreaterThan(24 * hours - 60_000);
    expect(expiresIn).toBeLessThan(24 * hours + 60_000);
    const read = () => bus.request('cmd.dispatcher.get-webhook', { workspace_id: ws, webhook_id: hook.id });
    expect((await read()).previous_secret_expires_at).toBe(rotated.previous_secret_expires_at);

    const during = await deliverOne(target);
    // The generated whsec_ secret signs under its decoded and its UTF-8 bytes; the replaced raw one under
    // its UTF-8 bytes.
    expect(String(during.headers['webhook-signature']).split(' ')).toHaveLength(3);
    expect(referenceVerifies(rotated.secret, during, true)).toBe(true);
    expect(referenceVerifies(rotated.secret, during)).toBe(true);
    expect(referenceVerifies('old-secret', during)).toBe(true);
    expect(referenceVerifies('unrelated', during)).toBe(false);
    expect(during.headers['x-webhook-signature']).toBe(specSignature(rotated.secret, during));
    expect(during.headers['x-legacy-signature']).toBe(specSignature(rotated.secret, during));

    const pool = createPool({ url: databaseUrl, schema: 'dispatcher' });
    await pool.query(
      "update endpoints set previous_secret_expires_at = now() - interval '1 second' where id = $1",
      [hook.id],
    );
    await pool.end();
    expect((await read()).previous_secret_expires_at).toBeNull();
    const after = await deliverOne(target);
    expect(String(after.headers['webhook-signature']).split(' ')).toHaveLength(2);
    expect(referenceVerifies(rotated.secret, after, true)).toBe(true);
    expect(referenceVerifies(rotated.secret, after)).toBe(true);
    expect(referenceVerifies('old-secret', after)).toBe(false);
    expect(after.headers['x-webhook-signature']).toBe(specSignature(rotated.secret, after));
  });

  it('takes the grace period from the request; 0, or no secret before, leaves nothing to honour', async () => {
    const target = await newReceiver();
    const create = (secret?: string) =>
      bus.request('cmd.dispatcher.create-webhook', {
        workspace_id: ws,
        url: target.url,
        events: ['conversation.resolved'],
        secret,
      });
    const rotate = (webhookId: string, graceHours?: number) =>
      bus.request('cmd.dispatcher.rotate-secret', {
        workspace_id: ws,
        webhook_id: webhookId,
        grace_hours: graceHours,
      });
    const signed = await create('k1');
    const before = Date.now();
    const hour = await rotate(signed.id, 1);
    expect(Date.parse(hour.previous_secret_expires_at!) - before).toBeLessThan(hours + 60_000);
    expect(Date.parse(hour.previous_secret_expires_at!) - before).toBeGreaterThan(hours - 60_000);
    expect((await rotate(signed.id, 0)).previous_secret_expires_at).toBeNull();
    expect((await rotate((await create()).id)).previous_secret_expires_at).toBeNull();
  });
});

describe('endpoint management and address policy', () => {
  it('lists, updates, rotates the secret, disables, deletes', async () => {
    const target = await newReceiver();
    const hook = await endpoint(target);
    const { webhooks: list } = await bus.request('cmd.dispatcher.list-webhooks', { workspace_id: workspace });
    expect(list.map((w) => w.id)).toContain(hook.id);
    const updated = await bus.request('cmd.dispatcher.update-webhook', {
      workspace_id: workspace,
      webhook_id: hook.id,
      events: ['conversation.resolved'],
    });
    expect(updated.events).toEqual(['conversation.resolved']);
    const { secret } = await bus.request('cmd.dispatcher.rotate-secret', {
      workspace_id: workspace,
      webhook_id: hook.id,
    });
    expect(secret).toMatch(/^whsec_/);
    expect(
      (await bus.request('cmd.dispatcher.get-webhook', { workspace_id: workspace, webhook_id: hook.id }))
        .has_secret,
    ).toBe(true);
    const off = await bus.request('cmd.dispatcher.update-webhook', {
      workspace_id: workspace,
      webhook_id: hook.id,
      enabled: false,
    });
    expect(off).toMatchObject({ enabled: false, disabled_reason: 'disabled by an operator' });
    await bus.request('cmd.dispatcher.delete-webhook', { workspace_id: workspace, webhook_id: hook.id });
    await expect(
      bus.request('cmd.dispatcher.get-webhook', { workspace_id: workspace, webhook_id: hook.id }),
    ).rejects.toMatchObject({ status: 404 });
    await expect(
      bus.request('cmd.dispatcher.get-webhook', { workspace_id: randomUUID(), webhook_id: list[0]!.id }),
    ).rejects.toMatchObject({ status: 404 });
  });

  it('refuses a webhook past the workspace limit, naming it, and counts no other workspace', async () => {
    const crowded = randomUUID();
    const create = (workspace_id: string) =>
      bus.request('cmd.dispatcher.create-webhook', {
        workspace_id,
        url: 'https://8.8.8.8/hook',
        events: ['*'],
      });
    for (let i = 0; i < endpointsPerWorkspace - 5; i++) await create(crowded);
    // Ten at once for the last five places: five are created, however they interleave.
    const last = await Promise.allSettled(Array.from({ length: 10 }, () => create(crowded)));
    expect(last.filter((outcome) => outcome.status === 'fulfilled')).toHaveLength(5);
    await expect(create(crowded)).rejects.toMatchObject({
      status: 400,
      body: { error: platformTexts.webhookLimitReached(endpointsPerWorkspace) },
    });
    expect((await create(randomUUID())).id).toEqual(expect.any(String));
    const { webhooks: list } = await bus.request('cmd.dispatcher.list-webhooks', { workspace_id: crowded });
    expect(list).toHaveLength(endpointsPerWorkspace);
  });

  it('refuses private, loopback, link-local and metadata targets unless allowed, and never follows redirects', async () => {
    const pool = createPool({ url: databaseUrl, schema: 'dispatcher' });
    await migrate(pool, {
      schema: 'dispatcher',
      directory: fileURLToPath(new URL('../migrations', import.meta.url)),
    });
    const strict = new AddressPolicy();
    const deps = {
      endpoints: new EndpointStore(pool, new SecretBox(SecretBox.generateKey())),
      deliveries: new DeliveryStore(pool),
      policy: strict,
      logger: createLogger('webhook-dispatcher', { level: 'silent' }),
      wake: () => undefined,
      secretGraceHours: 24,
    };
    for (const url of [
      'http://127.0.0.1/x',
      'http://10.1.2.3/x',
      'http://169.254.169.254/latest',
      'http://[::1]/x',
      'http://localhost/x',
    ]) {
      await expect(
        webhooks.create(deps, { workspace_id: workspace, url, events: ['*'] }),
        url,
      ).rejects.toMatchObject({ status: 400, body: { error: expect.stringMatching(/^url recusada: /) } });
    }
    await pool.end();

    // At connect time: a name that resolves to a loopback address is refused by the agent itself.
    const target = await newReceiver();
    const port = new URL(target.url).port;
    const agent = guardedAgent(strict, 1_000);
    await expect(
      request(`http://localhost:${port}/hook`, { method: 'POST', body: '{}', dispatcher: agent }),
    ).rejects.toThrow(/forbidden addresses/);
    await agent.close();
    expect(target.hits).toHaveLength(0);

    const landing = await newReceiver();
    const redirecting = await newReceiver((_hit, res) => {
      res.writeHead(302, { location: landing.url });
      res.end();
    });
    const hook = await endpoint(redirecting);
    await bus.publish(messageSent(workspace));
    const delivery = await waitFor(
      async () => (await deliveriesOf(hook.id)).deliveries.find((d) => d.last_error),
      { what: 'the 302' },
    );
    expect(delivery.last_error).toBe('HTTP 302');
    expect(landing.hits).toHaveLength(0);
  });
});
