import { AppError, platformTexts } from '@inbox/contracts';
import { answerJson, type Logger } from '@inbox/service-kit';
import type { Request, RequestHandler, Response } from 'express';
import { requestHash } from '../domain/request-hash.js';
import { WaiterSlots } from '../domain/waiter-slots.js';
import type { IdempotencyClaim, IdempotencyStore } from '../store/idempotency.js';

const validKey = /^[\x21-\x7E]{1,255}$/;
// Waiting polls at a growing interval: a quick holder is noticed at once, a slow one costs few queries.
const firstPollMs = 50;
const maxPollMs = 1_000;
/** What a 409 tells the caller: the holder usually finishes within a second or two. */
const retryAfterSeconds = 1;

export interface IdempotencyOptions {
  store: IdempotencyStore;
  logger: Logger;
  /** How long a request waits for the answer of the request holding its key. */
  waitMs?: number;
  /** Requests that may wait at once per workspace, and in all; more get the 409 at once. */
  maxWaitersPerWorkspace?: number;
  maxWaiters?: number;
  /**
   * A key in progress is held under a lease of `leaseMs`, renewed every `heartbeatMs` while its request
   * runs: a live holder keeps its key however long it takes, a dead one's key is taken over once the
   * lease lapses. The heartbeat must be well inside the lease, so that a slow renewal does not lose it.
   */
  leaseMs?: number;
  heartbeatMs?: number;
}

interface Lease {
  leaseMs: number;
  heartbeatMs: number;
}

/**
 * Idempotency-Key: the same key and body within 24 hours get the first answer again and cause no second
 * send; another body with the key gets 422; a request arriving while the first is under way waits for
 * its answer. Answers below 500 are kept; a 5xx, or an answer that could not be recorded, releases the
 * key so a retry runs again.
 *
 * Returns a wrapper for a route's last handler, which runs only for the request that holds the key.
 */
export function idempotency({
  store,
  logger,
  waitMs = 15_000,
  maxWaitersPerWorkspace = 20,
  maxWaiters = 200,
  // A dead gateway's keys are free again within 4 s, so a client retrying after a crash is answered well
  // within 10 s; three renewals may be missed before a live holder loses its key.
  leaseMs = 4_000,
  heartbeatMs = 1_000,
}: IdempotencyOptions): (endpoint: string, handler: RequestHandler) => RequestHandler {
  if (heartbeatMs >= leaseMs) throw new Error('idempotency heartbeatMs must be shorter than leaseMs');
  const lease: Lease = { leaseMs, heartbeatMs };
  const waiters = new WaiterSlots(maxWaitersPerWorkspace, maxWaiters);

  const waitForHolder = async (workspaceId: string, key: string, hash: string): Promise<IdempotencyClaim> => {
    if (!waiters.tryEnter(workspaceId)) return { kind: 'in_progress' };
    try {
      const deadline = Date.now() + waitMs;
      for (let interval = firstPollMs; ; interval = Math.min(interval * 2, maxPollMs)) {
        const left = deadline - Date.now();
        if (left <= 0) return { kind: 'in_progress' };
        await new Promise((resolve) => setTimeout(resolve, Math.min(interval, left)));
        const state = await store.peek(workspaceId, key, hash);
        if (state.kind === 'in_progress') continue;
        if (state.kind !== 'claimable') return state;
        // The holder gave the key up or died: whoever claims it first runs, the others wait on.
        const claim = await store.claim(workspaceId, key, hash, leaseMs);
        if (claim.kind !== 'in_progress') return claim;
      }
    } finally {
      waiters.leave(workspaceId);
    }
  };

  return (endpoint, handler) => async (req, res, next) => {
    const key = req.get('idempotency-key');
    if (key === undefined) return handler(req, res, next);
    if (!validKey.test(key)) return next(AppError.badRequest(platformTexts.idempotencyKeyInvalid));
    const workspaceId = res.locals.workspaceId!;
    const hash = requestHash(endpoint, req.body);

    let claim = await store.claim(workspaceId, key, hash, leaseMs);
    if (claim.kind === 'in_progress') claim = await waitForHolder(workspaceId, key, hash);
    switch (claim.kind) {
      case 'mismatch':
        return next(new AppError(422, { error: platformTexts.idempotencyKeyReused }));
      case 'completed':
        res.setHeader('Idempotent-Replayed', 'true');
        answerJson(res, claim.status, claim.body);
        return;
      case 'in_progress':
        res.setHeader('Retry-After', String(retryAfterSeconds));
        return next(new AppError(409, { error: platformTexts.idempotencyKeyInFlight }));
      case 'claimed':
        return holdingKey(store, logger, lease, { workspaceId, key, holder: claim.holder }, req, res, () =>
          handler(req, res, next),
        );
    }
  };
}

/**
 * Runs the handler of the request that claimed the key and records its answer: kept when below 500,
 * released otherwise. Whatever way the request ends, the key does not stay in progress: an answer that
 * cannot be recorded releases it, and so does a response that ended without res.json (or never got
 * one) once the handler is done. The lease is renewed until the answer is being recorded or the handler
 * is done; a client that goes away does not end it, since the send it asked for is still under way.
 */
async function holdingKey(
  store: IdempotencyStore,
  logger: Logger,
  { leaseMs, heartbeatMs }: Lease,
  { workspaceId, key, holder }: { workspaceId: string; key: string; holder: string },
  req: Request,
  res: Response,
  handler: () => unknown,
): Promise<void> {
  const stopHeartbeat = heartbeat(
    () => store.renew(workspaceId, key, holder, leaseMs),
    heartbeatMs,
    (error) =>
      error === undefined
        ? logger.warn({ request_id: req.id }, 'idempotency key taken over while its request ran')
        : logger.warn({ err: error, request_id: req.id }, 'idempotency lease renewal failed'),
  );
  const release = () => {
    stopHeartbeat();
    return store.release(workspaceId, key, holder).catch((error: unknown) => {
      // The key stays in progress until its lease lapses and a later request takes it over.
      logger.error({ err: error, request_id: req.id }, 'idempotency key release failed');
    });
  };
  const record = async (status: number, body: unknown) => {
    stopHeartbeat();
    if (status >= 500) return release();
    try {
      await store.complete(workspaceId, key, holder, status, body);
    } catch (error) {
      logger.error({ err: error, request_id: req.id }, 'idempotency record failed: key released');
      await release();
    }
  };

  let answered = false;
  // The answer is recorded before it is sent, so a crash in between cannot lose the record of a send.
  const send = res.json.bind(res);
  res.json = (body: unknown) => {
    answered = true;
    void record(res.statusCode, body).then(() => send(body));
    return res;
  };
  // 'close' also comes when the client goes away mid-request; the handler may still answer then.
  const responseOver = new Promise((resolve) => res.once('close', resolve));
  try {
    await handler();
  } finally {
    stopHeartbeat();
    void responseOver.then(() => (answered ? undefined : release()));
  }
}

/**
 * Calls `renew` every `everyMs` (never two at once) until the returned stop is called or `renew` says the
 * key is no longer ours; `trouble` hears of a failed renewal (with its error, and the beat goes on) or of
 * the lost key (without one, and the beat stops).
 */
function heartbeat(
  renew: () => Promise<boolean>,
  everyMs: number,
  trouble: (error?: unknown) => void,
): () => void {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const beat = async () => {
    try {
      if (!(await renew())) {
        if (!stopped) trouble();
        return;
      }
    } catch (error) {
      if (!stopped) trouble(error);
    }
    if (!stopped) timer = setTimeout(beat, everyMs);
  };
  timer = setTimeout(beat, everyMs);
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}
