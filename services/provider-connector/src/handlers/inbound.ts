import { isOutage } from '@inbox/bus';
import {
  eventTypes,
  InboundMessageEvent,
  InboundStatusEvent,
  InboundWatermarkEvent,
  type IntegrationChannel,
  platformTexts,
} from '@inbox/contracts';
import {
  type OutboxRelay,
  type Pool,
  type PoolClient,
  type PreparedEvent,
  prepareEvent,
  storableText,
  withTransaction,
  writeEvents,
  writeEventsIfChanged,
} from '@inbox/db';
import type { OutboundGuard } from '@inbox/outbound-http';
import { answerJson, clientAddress, inRequestContext, type Logger } from '@inbox/service-kit';
import { meter, traceAdmitted } from '@inbox/telemetry';
import express, {
  type ErrorRequestHandler,
  type Request,
  type RequestHandler,
  type Response,
  Router,
} from 'express';
import { defaultCallbackBodyBytes, type InboundBatch } from '../adapters/channel-adapter.js';
import { adapterFor, InboundRejected, ProviderError, type StoredConfigAdapter } from '../adapters/index.js';
import {
  boundMessage,
  boundStatus,
  boundWatermark,
  storableProviderId,
  type Truncation,
} from '../domain/inbound-bounds.js';
import type { CallbackIntegration, IntegrationStore } from '../store/integrations.js';
import { rememberReplyContext } from '../store/reply-contexts.js';
import { sendsKnownByStatus, sentMessageIds } from '../store/sends.js';
import { type Admission, CallbackAdmission, type CallbackLimits } from './callback-admission.js';
import { integrationCall } from './integration-call.js';
import type { KeptCallbacks } from './kept-callbacks.js';

export interface RecordDeps {
  pool: Pool;
  logger: Logger;
}

export interface InboundDeps extends RecordDeps {
  store: IntegrationStore;
  relay: OutboxRelay;
  /** Per-integration and per-address callback limits; the defaults suit production. */
  limits?: CallbackLimits;
  /** For notifications that name a resource to fetch (Mercado Livre's): the provider calls' client and deadline. */
  fetching?: { guard: OutboundGuard; providerTimeoutMs: number };
}

export interface InboundRouteDeps extends InboundDeps {
  /** Where callbacks of channels whose intake is `kept` go, and the workers that record them. */
  kept: KeptCallbacks;
}

/** Where a provider delivers an integration's inbound messages and status updates. */
export function inboundPath(channel: string, integrationId: string): string {
  return `/inbound/${channel}/${integrationId}`;
}

/** The integration's callback URL, as a registration names it to the provider. */
export function callbackUrlOf(channel: string, integrationId: string, publicConnectorUrl: string): string {
  return new URL(inboundPath(channel, integrationId), publicConnectorUrl).toString();
}

const unknownIntegration = { status: 404, text: platformTexts.callbackIntegrationUnknown };
const handshakeRefused = { status: 403, text: platformTexts.callbackHandshakeRefused };

const truncations = meter('connector').createCounter('connector.inbound.truncated', {
  description: 'Inbound message fields cut to the connector bounds, by channel and field',
});

/**
 * The caller's address as budgets count it: its socket's, or the one a trusted proxy names (the service's
 * `trustProxy`); an IPv6 caller by its /64, which one host usually owns.
 */
const callerOf = (req: Request) => clientAddress(req.ip ?? req.socket.remoteAddress);

function refuse(
  res: Response,
  decision: Exclude<Admission, { admitted: true }>,
  unknown: { status: number; text: string },
) {
  if (decision.status === 429) {
    res.setHeader('Retry-After', String(decision.retryAfterSeconds));
    answerJson(res, 429, { error: platformTexts.callbacksTooMany });
    return;
  }
  answerJson(res, unknown.status, { error: unknown.text });
}

/**
 * The providers' callbacks. Each is admitted before its body is read (known, connected, within its
 * limits), verified as the provider's own (signature or shared token), each provider message id is taken
 * in once, and what arrived is announced through the outbox, in the same transaction that records it
 * as seen, every field first made storable and cut to the connector's bounds.
 */
export function inboundRoutes(deps: InboundRouteDeps): Router {
  const router = Router();
  const admission = new CallbackAdmission(deps.store, deps.logger, deps.limits);
  const bodyReaders = new Map<number, RequestHandler>();
  const bodyReader = (limit: number) => {
    let reader = bodyReaders.get(limit);
    if (!reader) {
      reader = express.raw({ type: () => true, limit });
      bodyReaders.set(limit, reader);
    }
    return reader;
  };
  const admitted = new WeakMap<Request, CallbackIntegration>();

  /**
   * Keeps a callback of a channel whose intake is `kept`, and answers at once: its budgets' debts are not
   * held against it (refused, a provider that delivers once loses it), only its workspace's kept backlog,
   * which bounds what one workspace's flood or a stalled recording can pile up.
   */
  const keep = async (res: Response, found: CallbackIntegration, batch: InboundBatch) => {
    if (await deps.kept.keep(found, batch, admission.keptBytesPerWorkspace)) {
      answerJson(res, 200, { ok: true });
      return;
    }
    refuse(
      res,
      { admitted: false, status: 429, retryAfterSeconds: keptFullRetrySeconds },
      unknownIntegration,
    );
  };

  const admit =
    (unknown: { status: number; text: string }): RequestHandler =>
    async (req, res, next) => {
      const { channel, integrationId } = req.params as { channel: string; integrationId: string };
      const decision = await admission.admit(channel, integrationId, callerOf(req));
      if (!decision.admitted) {
        refuse(res, decision, unknown);
        return;
      }
      // The turn is held until the answer is sent or the client leaves; one that left while it waited
      // gives its turn back at once.
      if (req.socket.destroyed) {
        decision.release();
        return;
      }
      res.once('close', decision.release);
      admitted.set(req, decision.stored);
      traceAdmitted(req, res, next);
    };

  router.get('/inbound/:channel/:integrationId', admit(handshakeRefused), async (req, res) => {
    const found = admitted.get(req)!;
    const adapter = adapterFor(found.integration.channel);
    const challenge = adapter?.answerHandshake?.(found.config, req.query as Record<string, unknown>);
    if (!challenge) {
      answerJson(res, handshakeRefused.status, { error: handshakeRefused.text });
      return;
    }
    res.type('text/plain').send(challenge);
  });

  // A provider that appends the event's name to the callback URL (`callbackPathEvents`) posts the same
  // callbacks there; any other path under an integration's is no callback of ours, refused before it is
  // admitted.
  const eventPath: RequestHandler = (req, res, next) => {
    const { channel, event } = req.params as { channel: string; event: string };
    const events = adapterFor(channel as IntegrationChannel)?.callbackPathEvents;
    if (events?.includes(event)) return next();
    answerJson(res, unknownIntegration.status, { error: unknownIntegration.text });
  };

  const takeCallback: RequestHandler[] = [
    admit(unknownIntegration),
    // Z-API gzips its webhooks: a compressed body is inflated, up to the limit, and charged by the size
    // it inflates to (88 bytes of brotli can be a mebibyte to verify and parse). The limit is the
    // channel's own: what its provider may post.
    inRequestContext((req, res, next) => {
      const channel = admitted.get(req)!.integration.channel;
      bodyReader(adapterFor(channel)?.callbackBodyBytes ?? defaultCallbackBodyBytes)(req, res, next);
    }),
    async (req, res) => {
      const found = admitted.get(req)!;
      const adapter = adapterFor(found.integration.channel);
      if (!adapter) {
        answerJson(res, unknownIntegration.status, { error: unknownIntegration.text });
        return;
      }
      const rawBody = req.body as Buffer;
      const bill = admission.bill(found, rawBody.length);
      // Before it is verified and parsed: a refused body has cost that too.
      await bill.body();
      let batch: InboundBatch;
      try {
        batch = adapter.readInbound(found.config, {
          headers: req.headers,
          query: req.query as Record<string, unknown>,
          rawBody,
        });
      } catch (error) {
        if (error instanceof InboundRejected || error instanceof SyntaxError) {
          deps.logger.warn(
            { integration_id: found.integration.id, reason: error.message },
            'inbound callback refused',
          );
          answerJson(res, error instanceof InboundRejected ? 401 : 400, {
            error: platformTexts.callbackRefused,
          });
          return;
        }
        throw error;
      }
      const items = itemsOf(batch) + (batch.toFetch?.length ?? 0);
      if (items > admission.itemsPerCallback) {
        await bill.items(items);
        deps.logger.warn(
          { integration_id: found.integration.id, workspace_id: found.workspaceId, items },
          'inbound callback refused: too many items',
        );
        answerJson(res, 413, { error: platformTexts.callbackTooManyItems(admission.itemsPerCallback) });
        return;
      }
      if (adapter.callbackIntake === 'kept') {
        await bill.items(items);
        // Presence, connection and the like carry nothing to record.
        if (items === 0) answerJson(res, 200, { ok: true });
        else await keep(res, found, batch);
        return;
      }
      // Read, not fetched nor recorded: the provider delivers it again once the debt is paid.
      const owed = await bill.owedToOthers();
      if (owed) return refuse(res, owed, unknownIntegration);
      let taken: boolean;
      try {
        // Found out of reach a moment ago: not waited for again.
        deps.store.skipWhileOutOfReach();
        taken = await takeIn(deps, found, adapter, batch, (resolved) => bill.items(itemsOf(resolved)));
      } catch (error) {
        // Postgres out of reach: kept as a kept channel's callback is (on the bus while Postgres refuses
        // it), rather than left to a provider whose retries may end first (Evolution's twenty minutes,
        // Messenger's hour, after which Meta unsubscribes the app). What was recorded already is taken in
        // once again.
        if (!deps.store.noteOutage(error)) throw error;
        await keep(res, found, batch);
        return;
      }
      if (!taken) {
        answerJson(res, 503, { error: platformTexts.callbackResourceUnavailable });
        return;
      }
      answerJson(res, 200, { ok: true });
    },
  ];
  // Each path its own route, so that the server span and the metrics name the route it matched.
  router.post('/inbound/:channel/:integrationId', ...takeCallback);
  router.post('/inbound/:channel/:integrationId/:event', eventPath, ...takeCallback);
  // Postgres out of reach (and no kept way around it): a 503 a provider that redelivers tries again on,
  // not an unhandled error.
  const outage: ErrorRequestHandler = (error, _req, res, next) => {
    if (!isOutage(error) || res.headersSent) return next(error);
    deps.logger.warn({ err: error }, 'inbound callback not taken: the database cannot be reached');
    answerJson(res, 503, { error: platformTexts.serviceUnavailable });
  };
  router.use(outage);

  return router;
}

/** What a provider is told to wait when its workspace's kept backlog is full: it drains at the workers' pace. */
const keptFullRetrySeconds = 30;

/**
 * Takes a verified batch in: fetches what it names (false when the provider would not answer now), runs
 * `beforeRecording` on what it then holds, records it with what it carried for other accounts, logs what
 * it left out, and wakes the outbox relay.
 */
export async function takeIn(
  deps: InboundDeps,
  found: CallbackIntegration,
  adapter: StoredConfigAdapter,
  batch: InboundBatch,
  beforeRecording?: (resolved: InboundBatch) => Promise<void>,
): Promise<boolean> {
  let taken = batch;
  if (batch.toFetch?.length) {
    const resolved = await resolveNotified(deps, found, adapter, batch);
    if (!resolved) return false;
    taken = resolved;
  }
  await beforeRecording?.(taken);
  const notes = recordNotes(taken.unreadable);
  try {
    await recordBatch(deps, found, taken, notes);
    await recordElsewhere(deps, found, taken.elsewhere ?? [], notes);
  } finally {
    logNotes(deps.logger, found, notes);
  }
  deps.relay.wake();
  return true;
}

/**
 * Fetches what a verified notification names, with the integration's credentials: only that answer is
 * taken in. Undefined when the provider would not answer now; the notification is then tried again (a
 * kept one by the workers, an inline one by the provider's redelivery), and credentials it refused
 * disconnect the integration as a failed send would.
 */
async function resolveNotified(
  deps: InboundDeps,
  found: CallbackIntegration,
  adapter: StoredConfigAdapter,
  batch: InboundBatch,
): Promise<InboundBatch | undefined> {
  const { integration, workspaceId } = found;
  if (!adapter.resolveInbound || !deps.fetching)
    throw new Error(`${integration.channel} cannot fetch notified resources here`);
  const call = integrationCall(
    { ...deps.fetching, logger: deps.logger, store: deps.store },
    workspaceId,
    integration.id,
  );
  const resolved: InboundBatch = {
    messages: [...batch.messages],
    statuses: [...batch.statuses],
    watermarks: [...(batch.watermarks ?? [])],
    unreadable: [...(batch.unreadable ?? [])],
  };
  try {
    for (const notified of batch.toFetch ?? []) {
      const read = await adapter.resolveInbound(found.config, notified, call);
      resolved.messages.push(...read.messages);
      resolved.statuses.push(...read.statuses);
      resolved.unreadable!.push(...(read.unreadable ?? []));
    }
  } catch (error) {
    if (!(error instanceof ProviderError)) throw error;
    if (error.refusal === 'credentials_rejected')
      await deps.store.markCredentialsRejected(workspaceId, integration.id);
    deps.logger.warn(
      { err: error, integration_id: integration.id, workspace_id: workspaceId },
      'notified resource not fetched: the provider will deliver the notification again',
    );
    return undefined;
  }
  return resolved;
}

/**
 * The most items one transaction records. A callback may carry thousands (a 1 MiB body of short
 * messages): in one transaction it held a pool connection for seconds, and the outbox relays' snapshot
 * fence with it, while every other tenant's callbacks and sends waited. A provider that gets no answer
 * delivers the callback again, and what was recorded is then taken in once.
 */
const itemsPerTransaction = 100;

async function recordBatch(
  deps: RecordDeps,
  found: CallbackIntegration,
  batch: InboundBatch,
  notes: RecordNotes,
) {
  for (const part of partsOf(batch, itemsPerTransaction))
    await withTransaction(deps.pool, (client) => recordInTransaction(client, found, part, notes));
}

/** The batch in parts of at most `size` items: its messages, then its statuses, then its watermarks, as recorded. */
function* partsOf(batch: InboundBatch, size: number): Generator<InboundBatch> {
  const { messages, statuses, watermarks = [] } = batch;
  const total = messages.length + statuses.length + watermarks.length;
  for (let start = 0; start < total; start += size) {
    const end = start + size;
    // The part of `list`, which starts at `offset` among all the batch's items.
    const slice = <T>(list: T[], offset: number) =>
      list.slice(Math.max(0, start - offset), Math.max(0, end - offset));
    yield {
      messages: slice(messages, 0),
      statuses: slice(statuses, messages.length),
      watermarks: slice(watermarks, messages.length + statuses.length),
    };
  }
}

/**
 * What recording a callback left out or cut, to be logged once for the whole callback (logNotes): the ids
 * and sizes come from the caller, and a line per item let one callback of 5,000 write 5,000 lines.
 */
export interface RecordNotes {
  notTaken: Array<{ providerMessageId: string; reason: string }>;
  cut: Array<{ providerMessageId: string; field: string; originalLength: number }>;
}

export const recordNotes = (notTaken: RecordNotes['notTaken'] = []): RecordNotes => ({
  notTaken: [...notTaken],
  cut: [],
});

/**
 * Takes a verified batch in, within the caller's transaction: each provider message id once, announced
 * through the outbox, every field first made storable and cut to the connector's bounds. What it leaves
 * out or cuts goes in `notes`.
 *
 * A few statements whatever the batch holds: its messages' ids taken as seen and their events written in
 * one (and a reply context remembered for each new marketplace question or order), its statuses' sends
 * read in one, settled in one and their events written in one, its watermarks' in one. A round
 * trip per item kept a hundred items' transaction open for some hundreds of round trips, and every outbox
 * relay waited behind it: each publishes only what committed before the oldest transaction still running.
 */
export async function recordInTransaction(
  client: PoolClient,
  found: Pick<CallbackIntegration, 'integration' | 'workspaceId'>,
  batch: InboundBatch,
  notes: RecordNotes,
) {
  await recordMessages(client, found, batch.messages, notes);
  await recordStatuses(client, found, batch.statuses, notes);
  const watermarks = (batch.watermarks ?? []).flatMap((received) => {
    const watermark = boundWatermark(received);
    const data: InboundWatermarkEvent = {
      workspace_id: found.workspaceId,
      integration_id: found.integration.id,
      channel: found.integration.channel,
      user_id: watermark.userId,
      status: watermark.status,
      up_to: watermark.upTo.toISOString(),
    };
    // Repeats need no check: moving messages forward to a status they have changes nothing.
    return readable(notes, InboundWatermarkEvent, data)
      ? [prepareEvent(eventTypes.inboundWatermark, data)]
      : [];
  });
  if (watermarks.length > 0) await writeEvents(client, watermarks);
}

async function recordMessages(
  client: PoolClient,
  { integration, workspaceId }: Pick<CallbackIntegration, 'integration' | 'workspaceId'>,
  messages: InboundBatch['messages'],
  notes: RecordNotes,
) {
  const taken = new Map<
    string,
    { received: (typeof messages)[number]; event: PreparedEvent; truncated: Truncation[] }
  >();
  for (const received of messages) {
    const { message, truncated } = boundMessage(received);
    const data: InboundMessageEvent = {
      workspace_id: workspaceId,
      integration: { id: integration.id, channel: integration.channel, provider: integration.provider },
      provider_message_id: message.providerMessageId,
      ...(message.keyedBy === 'user_id'
        ? { from: null, from_user_id: message.from }
        : { from: `+${message.from}`, ...(message.userId ? { from_user_id: message.userId } : {}) }),
      name: message.name,
      text: message.text,
      type: message.type,
      sent_at: message.sentAt.toISOString(),
      ...(truncated.length > 0 ? { truncated: true } : {}),
    };
    // Checked before it is taken in as seen: an event messaging cannot read (an empty id, a sender that
    // is no number) was dead-lettered there after this had marked the message seen, so no repeat of the
    // callback could bring it in, and one tenant's such items filled the dead letters every tenant shares.
    if (!readable(notes, InboundMessageEvent, data)) continue;
    // A repeat within the batch is a repeat too: the first is taken.
    if (taken.has(message.providerMessageId)) continue;
    taken.set(message.providerMessageId, {
      received,
      event: prepareEvent(eventTypes.inboundMessage, data),
      truncated,
    });
  }
  if (taken.size === 0) return;
  const ids = [...taken.keys()];
  // Only the ids not seen before are announced, each in the commit that marks it seen. Marked in the
  // ids' order, not the callback's: two callbacks holding the same ids in other orders would otherwise
  // wait on each other's rows.
  const written = await writeEventsIfChanged(
    client,
    [...taken.values()].map((item) => item.event),
    {
      text: `insert into inbound_seen (integration_id, provider_message_id)
             select $1, id from unnest($2::text[]) as listed (id) order by id
             on conflict do nothing
             returning array_position($2::text[], provider_message_id) as n`,
      values: [integration.id, ids],
    },
  );
  for (const [i, { received, truncated }] of [...taken.values()].entries()) {
    if (!written[i]) continue;
    if (received.replyContext)
      await rememberReplyContext(client, integration.id, received.from, received.replyContext);
    for (const { field, originalLength } of truncated) {
      truncations.add(1, { channel: integration.channel, field });
      notes.cut.push({ providerMessageId: ids[i]!, field, originalLength });
    }
  }
}

async function recordStatuses(
  client: PoolClient,
  { integration, workspaceId }: Pick<CallbackIntegration, 'integration' | 'workspaceId'>,
  statuses: InboundBatch['statuses'],
  notes: RecordNotes,
) {
  const taken = statuses.flatMap((received) => {
    const status = boundStatus(received);
    const data: InboundStatusEvent = {
      workspace_id: workspaceId,
      integration_id: integration.id,
      provider_message_id: status.providerMessageId,
      status: status.status,
      error: status.error,
      error_code: status.errorCode ?? null,
      ...(status.at ? { at: status.at.toISOString() } : {}),
    };
    return readable(notes, InboundStatusEvent, data) ? [{ status, data }] : [];
  });
  if (taken.length === 0) return;
  // Named by our id when we sent it: a status the provider posts right after accepting a message
  // (a late failure) may reach messaging before the send's answer recorded the provider's id.
  const sent = await sentMessageIds(
    client,
    integration.id,
    taken.map(({ status }) => status.providerMessageId),
  );
  const settled = await sendsKnownByStatus(
    client,
    workspaceId,
    integration.id,
    taken.filter(({ status }) => !sent.has(status.providerMessageId)).map(({ status }) => status),
  );
  // Every status of a message settled here names it too, not only the first (a `sent` and a `failed`
  // in one callback).
  for (const { status, data } of taken)
    data.message_id = sent.get(status.providerMessageId) ?? settled.get(status.providerMessageId) ?? null;
  await writeEvents(
    client,
    taken.map(({ data }) => prepareEvent(eventTypes.inboundStatus, data)),
  );
}

/**
 * What a callback's items cost: what it carries, read or not. An item we cannot take in is paid for like
 * any other, or a caller could send floods of them for free.
 */
function itemsOf(batch: InboundBatch): number {
  const own =
    batch.messages.length +
    batch.statuses.length +
    (batch.watermarks?.length ?? 0) +
    (batch.unreadable?.length ?? 0);
  return (batch.elsewhere ?? []).reduce((sum, other) => sum + itemsOf(other.batch), own);
}

/**
 * Takes in what a callback carried for other accounts of its app (Meta posts every account's events to
 * the app's one callback URL), for each integration of that account whose app secret is this one's: the
 * callback was verified with it, so it is that app's word, and a tenant naming another's account with a
 * secret of its own gets none of it. An account no such integration has is noted, not taken in.
 */
async function recordElsewhere(
  deps: InboundDeps,
  found: CallbackIntegration,
  elsewhere: NonNullable<InboundBatch['elsewhere']>,
  notes: RecordNotes,
) {
  const secret = found.config.app_secret;
  for (const { account, batch } of elsewhere) {
    const sharing = secret
      ? await deps.store.connectedOfAccountOnApp(found.integration.channel, account, secret)
      : [];
    if (sharing.length === 0) {
      const reason = `account ${account.slice(0, 64)} has no integration of this app`;
      notes.notTaken.push(
        ...batch.messages.map((message) => ({ providerMessageId: message.providerMessageId, reason })),
      );
      continue;
    }
    for (const other of sharing) await recordBatch(deps, other, batch, notes);
  }
}

/**
 * One line per callback for what it could not take in and one for what it cut, not one per item, each
 * with the count and a few examples cut to their bounds: the ids come from the caller, and a line per item
 * let one callback write megabytes of log.
 */
export function logNotes(
  logger: Logger,
  { integration, workspaceId }: Pick<CallbackIntegration, 'integration' | 'workspaceId'>,
  { notTaken, cut }: RecordNotes,
): void {
  const about = { integration_id: integration.id, workspace_id: workspaceId };
  if (notTaken.length > 0)
    logger.warn(
      {
        ...about,
        count: notTaken.length,
        examples: notTaken.slice(0, 3).map(({ providerMessageId, reason }) => ({
          provider_message_id: storableProviderId(providerMessageId),
          reason: storableText(reason, 200),
        })),
      },
      'inbound messages not taken in',
    );
  if (cut.length > 0)
    logger.warn(
      {
        ...about,
        count: cut.length,
        examples: cut.slice(0, 3).map(({ providerMessageId, field, originalLength }) => ({
          provider_message_id: storableProviderId(providerMessageId),
          field,
          original_length: originalLength,
        })),
      },
      'inbound message fields cut to the connector bounds',
    );
}

/** Whether messaging can read the event; one it cannot is noted and left out. */
function readable(
  notes: RecordNotes,
  schema: typeof InboundMessageEvent | typeof InboundStatusEvent | typeof InboundWatermarkEvent,
  data: unknown,
): boolean {
  const checked = schema.safeParse(data);
  if (checked.success) return true;
  const issue = checked.error.issues[0];
  const id = (data as { provider_message_id?: unknown }).provider_message_id;
  notes.notTaken.push({
    providerMessageId: typeof id === 'string' ? id : '',
    reason: `not an event messaging reads: ${issue?.path.join('.') ?? ''} ${issue?.message ?? ''}`.trim(),
  });
  return false;
}
