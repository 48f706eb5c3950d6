import { AppError, platformTexts } from '@inbox/contracts';
import type { RequestHandler, Response } from 'express';

declare global {
  namespace Express {
    interface Locals {
      /** The work a request set going downstream (workspaceInFlight holds its place until it settles). */
      underWay?: Promise<unknown>;
    }
  }
}

/** Tells workspaceInFlight what the request set going, which outlives a client that hangs up. */
export function setUnderWay<T>(res: Response, work: Promise<T>): Promise<T> {
  res.locals.underWay = work;
  return work;
}

/**
 * At most `max` of one workspace's requests under way at once through the route; beyond, 503 with
 * Retry-After and nothing done. A request's place is given back when its answer ends or its client goes,
 * and not before the work it set going downstream (setUnderWay) has settled: a client that hangs up does
 * not stop it, and a flooder hanging up on each request would otherwise have its work bounded by nothing.
 * Placed after authentication and before the Idempotency-Key claim, so a refused request leaves nothing
 * a retry would meet.
 */
export function workspaceInFlight(max: number): RequestHandler {
  const underWay = new Map<string, number>();
  const release = (workspaceId: string) => {
    const left = (underWay.get(workspaceId) ?? 1) - 1;
    if (left === 0) underWay.delete(workspaceId);
    else underWay.set(workspaceId, left);
  };
  return (_req, res, next) => {
    const workspaceId = res.locals.workspaceId!;
    const taken = underWay.get(workspaceId) ?? 0;
    if (taken >= max) {
      res.setHeader('Retry-After', '1');
      return next(new AppError(503, { error: platformTexts.workspaceRequestsInFlight(max) }));
    }
    underWay.set(workspaceId, taken + 1);
    res.once('close', () => {
      const work = res.locals.underWay;
      if (!work) return release(workspaceId);
      work.then(
        () => release(workspaceId),
        () => release(workspaceId),
      );
    });
    next();
  };
}
