import { AppError, platformTexts } from '@inbox/contracts';
import type { Logger } from '@inbox/service-kit';
import type { RequestHandler } from 'express';
import { requestHash } from '../domain/request-hash.js';
import type { IdempotencyStore } from '../store/idempotency.js';

const validKey = /^[\x21-\x7E]{1,255}$/;
const waitForHolderMs = 15_000;

/**
 * Idempotency-Key: the same key and body within 24 hours get the first answer again and cause no second
 * send; another body with the key gets 422; a request arriving while the first is under way waits for
 * its answer. Answers below 500 are kept; a 5xx releases the key so a retry runs again.
 */
export function idempotency(store: IdempotencyStore, endpoint: string, logger: Logger): RequestHandler {
  return async (req, res, next) => {
    const key = req.get('idempotency-key');
    if (key === undefined) return next();
    if (!validKey.test(key)) return next(AppError.badRequest(platformTexts.idempotencyKeyInvalid));
    const workspaceId = res.locals.workspaceId!;
    const hash = requestHash(endpoint, req.body);

    const deadline = Date.now() + waitForHolderMs;
    for (;;) {
      const claim = await store.claim(workspaceId, key, hash);
      if (claim.kind === 'mismatch')
        return next(new AppError(422, { error: platformTexts.idempotencyKeyReused }));
      if (claim.kind === 'completed') {
        res.setHeader('Idempotent-Replayed', 'true');
        res.status(claim.status).json(claim.body);
        return;
      }
      if (claim.kind === 'claimed') break;
      if (Date.now() > deadline)
        return next(new AppError(409, { error: platformTexts.idempotencyKeyInFlight }));
      await new Promise((resolve) => setTimeout(resolve, 100));
    }

    // The answer is recorded before it is sent, so a crash in between cannot lose the record of a send.
    const send = res.json.bind(res);
    res.json = (body: unknown) => {
      const status = res.statusCode;
      const recorded =
        status < 500 ? store.complete(workspaceId, key, status, body) : store.release(workspaceId, key);
      recorded.then(
        () => send(body),
        (error: unknown) => {
          logger.error({ err: error, request_id: req.id }, 'idempotency record failed');
          send(body);
        },
      );
      return res;
    };
    next();
  };
}
