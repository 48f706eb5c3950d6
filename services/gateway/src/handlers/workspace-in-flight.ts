import { AppError, platformTexts } from '@inbox/contracts';
import type { RequestHandler } from 'express';

/**
 * At most `max` of one workspace's requests under way at once through the route; beyond, 503 with
 * Retry-After and nothing done. A request's place is given back when its answer ends or its client goes.
 * Placed after authentication and before the Idempotency-Key claim, so a refused request leaves nothing
 * a retry would meet.
 */
export function workspaceInFlight(max: number): RequestHandler {
  const underWay = new Map<string, number>();
  return (_req, res, next) => {
    const workspaceId = res.locals.workspaceId!;
    const taken = underWay.get(workspaceId) ?? 0;
    if (taken >= max) {
      res.setHeader('Retry-After', '1');
      return next(new AppError(503, { error: platformTexts.workspaceRequestsInFlight(max) }));
    }
    underWay.set(workspaceId, taken + 1);
    res.once('close', () => {
      const left = (underWay.get(workspaceId) ?? 1) - 1;
      if (left === 0) underWay.delete(workspaceId);
      else underWay.set(workspaceId, left);
    });
    next();
  };
}
