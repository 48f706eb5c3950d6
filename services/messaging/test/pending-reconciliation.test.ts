import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { NatsBus } from '@inbox/bus';
import { platformTexts, sendRecordRetentionDays } from '@inbox/contracts';
import { createPool, migrate, OutboxRelay, type Pool, withTransaction } from '@inbox/db';
import { connectorService } from '@inbox/provider-connector';
import { createLogger, type HostedService, hostService, SecretBox } from '@inbox/service-kit';
import { serveMetrics } from '@inbox/telemetry';
import { createDatabase, uniquePrefix, waitFor } from '@inbox/testkit';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { MessagingConfig } from '../src/config.js';
import { externalSend } from '../src/handlers/external-send.js';
import { applyStatus } from '../src/handlers/inbound.js';
import { PendingReconciler } from '../src/reconcile-pending.js';
import { ConversationStore } from '../src/store/conversations.js';
import { setAside, stalePendingMessages, workspacesWithStalePending } from '../src/store/pending-messages.js';
import { Replies } from '../src/store/replies.js';
import { recordSent, SentMessages } from '../src/store/sent-messages.js';

const logger = createLogger('messaging', { level: 'silent' });
const encryptionKey = SecretBox.generateKey();
let messagingPool: Pool;
let connectorPool: Pool;
let connector: HostedService;
let bus: NatsBus;
let relay: OutboxRelay;
// A stand-in for the provider's API that only counts: reconciliation must never reach it.
let provider: Server;
let providerCalls = 0;
let providerUrl: string;
// How the stand-in answers: a failure, an acceptance, or nothing at all (a provider that does not answer).
let providerAnswer: 'fail' | 'accept' | 'slow' | 'hang' = 'fail';

beforeAll(async () => {
  const { natsUrl, postgresAdminUrl } = inject('infra');
  const databaseUrl = await createDatabase(postgresAdminUrl);
  const prefix = uniquePrefix();
  provider = createServer((_req, res) => {
    providerCalls++;
    if (providerAnswer === 'hang') return;
    if (providerAnswer === 'accept' || providerAnswer === 'slow') {
      const id = `wamid.${providerCalls}`;
      const accept = () => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ messaging_product: 'whatsapp', messages: [{ id }] }));
      };
      // Slow enough that a concurrent request reaches the connector while this call is under way.
      if (providerAnswer === 'slow') setTimeout(accept, 250);
      else accept();
      return;
    }
    res.writeHead(500).end();
  });
  await new Promise<void>((resolve) => provider.listen(0, '127.0.0.1', resolve));
  providerUrl = `http://127.0.0.1:${(provider.address() as AddressInfo).port}`;
  // The real connector, answering on the bus from its own schema.
  connector = await hostService(
    connectorService({
      encryptionKey,
      publicConnectorUrl: 'http://127.0.0.1:1',
      allowedCidrs: '127.0.0.0/8',
      providerTimeoutMs: 500,
    }),
    { databaseUrl, busUrl: natsUrl, busPrefix: prefix, port: 0, host: '127.0.0.1', logLevel: 'silent' },
  );
  connectorPool = createPool({ url: databaseUrl, schema: 'connector' });
  messagingPool = createPool({ url: databaseUrl, schema: 'messaging' });
  await migrate(messagingPool, {
    schema: 'messaging',
    directory: fileURLToPath(new URL('../migrations', import.meta.url)),
    outbox: true,
  });
  bus = await NatsBus.connect({ url: natsUrl, prefix });
  // Not started: the events stay in the outbox, where the test reads them.
  relay = new OutboxRelay({ pool: messagingPool, bus, schema: 'messaging' });
});
afterAll(async () => {
  await bus?.drain();
  await connector?.stop();
  await Promise.all([messagingPool?.end(), connectorPool?.end()]);
  provider?.closeAllConnections();
  provider?.close();
});

/** A workspace with a connected integration whose provider is the counting stand-in. */
async function workspaceWithIntegration() {
  const workspaceId = randomUUID();
  const integrationId = randomUUID();
  await connectorPool.query(
    `insert into integrations (id, workspace_id, channel, provider, status, config_sealed, account_id, connected_at)
     values ($1, $2, 'chat-official', 'chat-official', 'connected', $3, 'pn-1', now())`,
    [
      integrationId,
      workspaceId,
      new SecretBox(encryptionKey).seal(
        JSON.stringify({
          base_url: providerUrl,
          phone_number_id: 'pn-1',
          waba_id: 'waba-1',
          access_token: 't',
          app_secret: 's',
          verify_token: 'v',
        }),
        `integrations:${workspaceId}:${integrationId}`,
      ),
    ],
  );
  /** An outbound message as send-message stores it, `minutesAgo`, and still pending. */
  const pendingMessage = (text: string, minutesAgo: number) =>
    withTransaction(messagingPool, async (client) => {
      const store = new ConversationStore(client, workspaceId);
      const { contact } = await store.upsertContact('+5511944440001', 'Dora');
      const { conversation } = await store.openConversation(contact.id, {
        id: integrationId,
        channel: 'chat-official',
        provider: 'chat-official',
      });
      const id = await store.addOutboundMessage({
        conversationId: conversation.id,
        text,
        senderType: 'agent',
      });
      await client.query(`update messages set created_at = now() - $2 * interval '1 minute' where id = $1`, [
        id,
        minutesAgo,
      ]);
      return { id, conversationId: conversation.id };
    });
  /** What the connector records once the provider accepted a message (send-once's recordSend). */
  const recordSend = (messageId: string, providerMessageId: string, sentAt: Date) =>
    connectorPool.query(
      'insert into sends (message_id, workspace_id, integration_id, provider_message_id, sent_at) values ($1, $2, $3, $4, $5)',
      [messageId, workspaceId, integrationId, providerMessageId, sentAt],
    );
  const message = async (id: string) =>
    (
      await messagingPool.query<{
        status: string;
        provider_message_id: string | null;
        sent_at: Date | null;
        error: string | null;
      }>(
        'select status, provider_message_id, sent_at, error from messages where workspace_id = $1 and id = $2',
        [workspaceId, id],
      )
    ).rows[0]!;
  const sentEvents = async () =>
    (
      await messagingPool.query<{ data: { message: { id: string; text: string }; conversation_id: string } }>(
        `select data from outbox where type = 'message.sent' and workspace_id = $1`,
        [workspaceId],
      )
    ).rows.map((row) => row.data);
  return { workspaceId, integrationId, pendingMessage, recordSend, message, sentEvents };
}

async function reconciledCount(outcome: string): Promise<number> {
  const server = createServer(serveMetrics);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const { port } = server.address() as AddressInfo;
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    const line = text
      .split('\n')
      .find((l) => l.startsWith('messaging_pending_reconciled_total{') && l.includes(`outcome="${outcome}"`));
    return line ? Number(line.split(' ').at(-1)) : 0;
  } finally {
    server.close();
  }
}

describe('pending message reconciliation', () => {
  it('settles from what the connector recorded, fails what it never sent, and never calls the provider', async () => {
    const world = await workspaceWithIntegration();
    // The connector sent it and recorded the send; messaging died before hearing the answer.
    const recorded = await world.pendingMessage('Olá, chegou?', 10);
    const sentAt = new Date('2026-03-01T12:00:00.000Z');
    await world.recordSend(recorded.id, 'wamid.recorded', sentAt);
    // Stored, then the process died before (or while) the connector was asked: no send recorded.
    const unrecorded = await world.pendingMessage('Olá de novo', 10);
    // Its provider call started and never reported back: it may have been delivered.
    const attempted = await world.pendingMessage('Chegou ou não?', 10);
    await connectorPool.query(
      'insert into sends (message_id, workspace_id, integration_id) values ($1, $2, $3)',
      [attempted.id, world.workspaceId, world.integrationId],
    );
    // Pending for less than the threshold: its send may still be under way.
    const recent = await world.pendingMessage('Acabei de enviar', 1);
    const before = {
      sent: await reconciledCount('sent'),
      failed: await reconciledCount('failed'),
      unknown: await reconciledCount('unknown'),
    };

    const reconciler = new PendingReconciler({ pool: messagingPool, bus, relay, logger, afterMinutes: 5 });
    const counts = await reconciler.reconcile();
    expect(counts).toMatchObject({ sent: 1, failed: 1, unknown: 1 });

    expect(await world.message(recorded.id)).toEqual({
      status: 'sent',
      provider_message_id: 'wamid.recorded',
      sent_at: sentAt,
      error: null,
    });
    expect(await world.message(unrecorded.id)).toMatchObject({
      status: 'failed',
      provider_message_id: null,
      error: platformTexts.pendingUnresolved(5),
    });
    expect(await world.message(attempted.id)).toMatchObject({
      status: 'pending',
      error: platformTexts.sendOutcomeUnknown(attempted.id),
    });
    expect((await world.message(recent.id)).status).toBe('pending');
    const events = await world.sentEvents();
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      conversation_id: recorded.conversationId,
      message: { id: recorded.id, text: 'Olá, chegou?' },
      integration: { id: world.integrationId, provider: 'chat-official' },
    });
    expect(await reconciledCount('sent')).toBe(before.sent + 1);
    expect(await reconciledCount('failed')).toBe(before.failed + 1);
    expect(await reconciledCount('unknown')).toBe(before.unknown + 1);

    // Settled once: a second pass finds nothing left to settle and announces nothing again.
    expect(await reconciler.reconcile()).toMatchObject({ sent: 0, failed: 0, unknown: 0 });
    expect(await world.sentEvents()).toHaveLength(1);
    expect(providerCalls).toBe(0);
  });

  it('leaves pending a message whose send the connector may have forgotten, rather than failing it', async () => {
    const world = await workspaceWithIntegration();
    // Set aside pass after pass for a month, while the connector pruned the record of its send: each
    // time set aside, it is pending again from then on.
    const forgotten = await world.pendingMessage('Lembra de mim?', sendRecordRetentionDays * 24 * 60);
    await setAside(messagingPool, world.workspaceId, forgotten.id);
    await messagingPool.query(
      `update messages set pending_since = now() - interval '10 minutes' where id = $1`,
      [forgotten.id],
    );
    const reconciler = new PendingReconciler({ pool: messagingPool, bus, relay, logger, afterMinutes: 5 });
    await reconciler.reconcile();
    expect(await world.message(forgotten.id)).toMatchObject({
      status: 'pending',
      error: platformTexts.sendOutcomeUnknown(forgotten.id),
    });
    expect(providerCalls).toBe(0);
  });

  it("asks again about a send of unknown outcome once the provider's status names it, and settles it", async () => {
    const world = await workspaceWithIntegration();
    const attempted = await world.pendingMessage('Chegou, afinal?', 10);
    await connectorPool.query(
      'insert into sends (message_id, workspace_id, integration_id) values ($1, $2, $3)',
      [attempted.id, world.workspaceId, world.integrationId],
    );
    const reconciler = new PendingReconciler({ pool: messagingPool, bus, relay, logger, afterMinutes: 5 });
    expect(await reconciler.reconcile()).toMatchObject({ unknown: 1 });
    // Not asked about again until something new is known.
    expect(await reconciler.reconcile()).toMatchObject({ unknown: 0, sent: 0 });

    // The provider's status echoed our id: the connector recorded the send from it, and named it.
    const sentAt = new Date('2026-03-02T08:00:00.000Z');
    await connectorPool.query(
      'update sends set provider_message_id = $2, sent_at = $3 where message_id = $1',
      [attempted.id, 'wamid.by-status', sentAt],
    );
    await applyStatus(
      { pool: messagingPool, relay },
      {
        workspace_id: world.workspaceId,
        integration_id: world.integrationId,
        provider_message_id: 'wamid.by-status',
        status: 'delivered',
        error: null,
        message_id: attempted.id,
        error_code: null,
      },
    );
    expect(await reconciler.reconcile()).toMatchObject({ sent: 1 });
    expect(await world.message(attempted.id)).toEqual({
      status: 'sent',
      provider_message_id: 'wamid.by-status',
      sent_at: sentAt,
      error: null,
    });
    expect((await world.sentEvents()).map((event) => event.message.id)).toEqual([attempted.id]);
    expect(providerCalls).toBe(0);
  });

  it('leaves messages pending while the connector cannot answer', async () => {
    const world = await workspaceWithIntegration();
    const pending = await world.pendingMessage('Sem conector', 10);
    const silent = await NatsBus.connect({ url: inject('infra').natsUrl, prefix: uniquePrefix() });
    try {
      const reconciler = new PendingReconciler({
        pool: messagingPool,
        bus: silent,
        relay,
        logger,
        afterMinutes: 5,
      });
      await expect(reconciler.reconcile()).rejects.toThrow();
    } finally {
      await silent.drain();
    }
    expect((await world.message(pending.id)).status).toBe('pending');
    expect(providerCalls).toBe(0);
  });

  it("sets aside a message it cannot settle, behind the others, and settles every other tenant's", async () => {
    const hostile = await workspaceWithIntegration();
    // Sent, as the connector recorded, with a text whose `message.sent` is too large to write.
    const unsettleable = await hostile.pendingMessage('\u0001'.repeat(100_000), 30);
    await hostile.recordSend(unsettleable.id, 'wamid.huge', new Date());
    const other = await workspaceWithIntegration();
    const theirs = await other.pendingMessage('Depois', 10);
    await other.recordSend(theirs.id, 'wamid.theirs', new Date());

    const reconciler = new PendingReconciler({ pool: messagingPool, bus, relay, logger, afterMinutes: 5 });
    const setAsideBefore = await reconciledCount('set-aside');
    expect(await reconciler.reconcile()).toMatchObject({ 'set-aside': 1 });
    expect(await reconciledCount('set-aside')).toBe(setAsideBefore + 1);
    expect(await other.message(theirs.id)).toMatchObject({
      status: 'sent',
      provider_message_id: 'wamid.theirs',
    });
    expect((await hostile.message(unsettleable.id)).status).toBe('pending');
    // Not again until it has waited as long as a new message.
    expect(await reconciler.reconcile()).toMatchObject({ 'set-aside': 0 });
  });

  it('waits as long for a retried send as for a new one, counted from the retry', async () => {
    const world = await workspaceWithIntegration();
    // Stored ten minutes ago and refused by the provider; its request retried with the same key just now.
    const retried = await world.pendingMessage('De novo', 10);
    await withTransaction(messagingPool, async (client) => {
      const store = new ConversationStore(client, world.workspaceId);
      await store.markFailed(retried.id, 'refused');
      await store.retryFailed(retried.id);
    });
    // (The job spans workspaces: other tests' messages are its business, this one's state is the test's.)
    const reconciler = new PendingReconciler({ pool: messagingPool, bus, relay, logger, afterMinutes: 5 });
    await reconciler.reconcile();
    expect(await world.message(retried.id)).toMatchObject({ status: 'pending', error: null });

    // Pending for longer than the threshold since the retry: settled as any other.
    await messagingPool.query(
      `update messages set pending_since = now() - interval '10 minutes' where workspace_id = $1 and id = $2`,
      [world.workspaceId, retried.id],
    );
    await reconciler.reconcile();
    expect(await world.message(retried.id)).toMatchObject({
      status: 'failed',
      error: platformTexts.pendingUnresolved(5),
    });
  });

  it('announces a send once when its request and the job both settle it', async () => {
    const world = await workspaceWithIntegration();
    const pending = await world.pendingMessage('Uma vez só', 10);
    const message = {
      workspaceId: world.workspaceId,
      conversationId: pending.conversationId,
      integration: { id: world.integrationId, provider: 'chat-official' as const },
      messageId: pending.id,
      text: 'Uma vez só',
      senderType: 'agent' as const,
      providerMessageId: 'wamid.once',
      sentAt: '2026-03-03T09:00:00.000Z',
    };
    const requests = new SentMessages(messagingPool);
    // Writers at once: two requests' answers in one turn's statement, and the job's on its own, which
    // waits on that statement's row lock, then finds the message sent.
    await Promise.all([
      requests.record(message),
      requests.record(message),
      recordSent(messagingPool, message),
    ]);
    await recordSent(messagingPool, message);
    expect((await world.message(pending.id)).status).toBe('sent');
    expect((await world.sentEvents()).map((event) => event.message.id)).toEqual([pending.id]);
    // Nor was a sequence number taken for an event never written: the conversation's next one follows.
    const { rows } = await messagingPool.query<{ ordering_seq: string }>(
      `select ordering_seq from outbox where workspace_id = $1 and type = 'message.sent'`,
      [world.workspaceId],
    );
    const { rows: sequences } = await messagingPool.query<{ seq: string }>(
      'select seq from event_sequences where ordering_key = $1',
      [pending.conversationId],
    );
    expect(sequences[0]?.seq).toBe(rows[0]?.ordering_seq);
  });

  it('takes stale messages in turns by workspace, so a workspace with thousands holds back no other', async () => {
    const flooded = await workspaceWithIntegration();
    const other = await workspaceWithIntegration();
    // The flooded workspace's are the oldest, and more than a round takes of one workspace.
    for (let i = 0; i < 12; i++) await flooded.pendingMessage(`Parado ${i}`, 30);
    const waiting = await other.pendingMessage('Também parado', 6);
    const pair = [flooded.workspaceId, other.workspaceId];
    const stale = await workspacesWithStalePending(messagingPool, 5);
    expect(stale).toEqual(expect.arrayContaining(pair));
    expect(new Set(stale).size).toBe(stale.length);
    const batch = await stalePendingMessages(messagingPool, 5, pair, 3);
    // In turns: each workspace's oldest, then the flooded one's next two; never more than three of one.
    expect(batch.map((m) => m.workspace_id)).toEqual([
      flooded.workspaceId,
      other.workspaceId,
      flooded.workspaceId,
      flooded.workspaceId,
    ]);
    expect(batch[1]!.id).toBe(waiting.id);
    // Settled by the job, each workspace's all the same (nothing was recorded: never sent, so failed).
    const reconciler = new PendingReconciler({
      pool: messagingPool,
      bus,
      relay,
      logger,
      afterMinutes: 5,
      perWorkspace: 5,
    });
    await reconciler.reconcile();
    expect((await other.message(waiting.id)).status).toBe('failed');
    const { rows } = await messagingPool.query<{ pending: number }>(
      `select count(*)::int as pending from messages where workspace_id = $1 and status = 'pending'`,
      [flooded.workspaceId],
    );
    expect(rows[0]!.pending).toBe(0);
  });

  it('refuses a threshold shorter than a send may take', () => {
    const required = { DATABASE_URL: 'postgres://x/y', BUS_URL: 'nats://nats:4222' };
    expect(MessagingConfig.parse(required).PENDING_RECONCILE_AFTER_MINUTES).toBe(5);
    expect(MessagingConfig.safeParse({ ...required, PENDING_RECONCILE_AFTER_MINUTES: '0' }).success).toBe(
      false,
    );
  });
});

describe('at most one provider call per message', () => {
  const send = (world: { workspaceId: string; integrationId: string }, messageId: string) =>
    bus
      .request('cmd.connector.send-text', {
        workspace_id: world.workspaceId,
        integration_id: world.integrationId,
        message_id: messageId,
        to: '+5511944440001',
        text: 'uma vez só',
      })
      .then(
        (sent) => ({ status: 200, body: sent as unknown }),
        (error: { status: number; body: unknown }) => ({ status: error.status, body: error.body }),
      );

  it('calls again after a refusal, answers the first result to a repeat, and never calls after an unknown outcome', async () => {
    const world = await workspaceWithIntegration();
    const calls = () => providerCalls;

    // Refused: nothing was sent, so the attempt is forgotten and a retry calls the provider again.
    providerAnswer = 'fail';
    const refusedId = randomUUID();
    const start = calls();
    const refused = await send(world, refusedId);
    expect(refused, JSON.stringify(refused)).toMatchObject({ status: 502 });
    providerAnswer = 'accept';
    const accepted = await send(world, refusedId);
    expect(accepted.status).toBe(200);
    expect(calls()).toBe(start + 2);
    // A repeat of a sent message answers what the provider said, without calling it.
    expect(await send(world, refusedId)).toEqual(accepted);
    expect(calls()).toBe(start + 2);

    // No answer in time: the outcome is unknown (504), and a repeat is refused by name, not sent again.
    providerAnswer = 'hang';
    const unknownId = randomUUID();
    expect((await send(world, unknownId)).status).toBe(504);
    providerAnswer = 'accept';
    expect(await send(world, unknownId)).toEqual({
      status: 409,
      body: { error: platformTexts.sendOutcomeUnknown(unknownId) },
    });
    expect(calls()).toBe(start + 3);
    expect(
      await bus.request('cmd.connector.send-outcome', {
        workspace_id: world.workspaceId,
        message_id: unknownId,
      }),
    ).toEqual({
      outcome: 'unknown',
    });
  });
});

/** Until `count` sessions of this test's database wait on a lock (held by the test's own transaction). */
const waitForLockWaiters = (count: number, what: string) =>
  waitFor(
    async () =>
      (
        await messagingPool.query<{ n: number }>(
          `select count(*)::int as n from pg_stat_activity
            where datname = current_database() and wait_event_type = 'Lock'`,
        )
      ).rows[0]!.n === count,
    { what },
  );

describe('external sends racing other writers', () => {
  it('reopens by what the conversation became when it changed between the read and the store', async () => {
    const world = await workspaceWithIntegration();
    const opened = await world.pendingMessage('abre a conversa', 0);
    providerAnswer = 'accept';
    const holder = await messagingPool.connect();
    await holder.query('begin');
    // Assigned to a person and resolved meanwhile: a reply must reopen it as assigned, not as open.
    await holder.query(
      `update conversations set assigned_to_type = 'human', assigned_to_id = $2, status = 'resolved' where id = $1`,
      [opened.conversationId, randomUUID()],
    );
    const sending = externalSend(
      {
        pool: messagingPool,
        bus,
        relay,
        sent: new SentMessages(messagingPool),
        replies: new Replies(messagingPool),
      },
      { workspace_id: world.workspaceId, conversation_id: opened.conversationId, text: 'e agora?' },
    );
    await waitForLockWaiters(1, 'the send waiting on the conversation');
    await holder.query('commit');
    holder.release();
    const sent = await sending;
    const { rows } = await messagingPool.query<{ status: string; texts: string[] }>(
      `select c.status, array(select text from messages m where m.conversation_id = c.id order by m.created_at) as texts
         from conversations c where c.id = $1`,
      [opened.conversationId],
    );
    expect(rows).toEqual([{ status: 'assigned', texts: ['abre a conversa', 'e agora?'] }]);
    expect(sent.message_id).toEqual(expect.any(String));
  });

  it('stores one message and calls the provider once when two requests with one key reach messaging together', async () => {
    const world = await workspaceWithIntegration();
    const opened = await world.pendingMessage('abre a conversa', 0);
    providerAnswer = 'slow';
    const start = providerCalls;
    // As when the gateway's record of the key was lost (its lease lapsed under a stalled holder).
    const command = {
      workspace_id: world.workspaceId,
      conversation_id: opened.conversationId,
      text: 'só uma vez',
      idempotency_key: 'ext-race',
    };
    const deps = {
      pool: messagingPool,
      bus,
      relay,
      sent: new SentMessages(messagingPool),
      replies: new Replies(messagingPool),
    };
    // Both requests look their key up before either stores a message: the conversation is held locked
    // until both have found no message and wait on it to store one. Each in a replica of its own (its
    // own batch of replies): in one replica's batch the key's clash is its turn's (outbound-store test).
    const holder = await messagingPool.connect();
    await holder.query('begin');
    await holder.query('select 1 from conversations where id = $1 for update', [opened.conversationId]);
    const running = Promise.all(
      [0, 1].map(() =>
        externalSend({ ...deps, replies: new Replies(messagingPool) }, command).then(
          (sent) => ({ status: 200, body: sent as unknown }),
          (error: { status?: number; body?: unknown }) => ({ status: error.status, body: error.body }),
        ),
      ),
    );
    await waitForLockWaiters(2, 'both requests waiting on the conversation');
    await holder.query('commit');
    holder.release();
    const answers = await running;
    const keyed = await messagingPool.query<{ id: string }>(
      'select id from messages where workspace_id = $1 and idempotency_key = $2',
      [world.workspaceId, 'ext-race'],
    );
    expect(keyed.rows).toHaveLength(1);
    const messageId = keyed.rows[0]!.id;
    // One ran the send; the other continued the same message and, its send still under way, was told
    // so by name (the caller's retry then gets the first answer), never a second provider call.
    expect(answers.map((a) => a.status).sort()).toEqual([200, 409]);
    expect(answers.find((a) => a.status === 200)!.body).toMatchObject({ message_id: messageId });
    expect(answers.find((a) => a.status === 409)!.body).toEqual({
      error: platformTexts.sendOutcomeUnknown(messageId),
    });
    expect(providerCalls).toBe(start + 1);
    const retry = await externalSend(deps, command);
    expect(retry).toEqual(answers.find((a) => a.status === 200)!.body);
    expect(providerCalls).toBe(start + 1);
  });
});
