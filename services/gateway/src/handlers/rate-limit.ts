import { AppError, errorTexts } from '@inbox/contracts';
import type { RequestHandler } from 'express';
import type { WorkspaceRateLimiter } from '../rate-limit/workspace-rate-limiter.js';

/** Counts the request against its workspace's budget and says where it stands in RateLimit-* headers. */
export function rateLimit(limiter: WorkspaceRateLimiter): RequestHandler {
  return async (_req, res, next) => {
    const decision = await limiter.take(res.locals.workspaceId!);
    res.setHeader('RateLimit-Limit', String(decision.limit));
    res.setHeader('RateLimit-Remaining', String(decision.remaining));
    res.setHeader('RateLimit-Reset', String(decision.resetSeconds));
    if (!decision.allowed) {
      res.setHeader('Retry-After', String(decision.resetSeconds));
      return next(new AppError(429, { error: errorTexts.rateLimited(decision.limit) }));
    }
    next();
  };
}
