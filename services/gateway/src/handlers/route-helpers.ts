import { AppError, type BodyRule, platformTexts, validateBody } from '@inbox/contracts';
import type { RequestHandler } from 'express';
import type { z } from 'zod';

declare global {
  namespace Express {
    interface Locals {
      body?: unknown;
    }
  }
}

/** Checks the parsed body against the endpoint's rule; the typed value is left in res.locals.body. */
export function validated<S extends z.ZodType>(rule: BodyRule<S>): RequestHandler {
  return (req, res, next) => {
    const result = validateBody(rule, req.body);
    if (!result.ok) return next(AppError.badRequest(result.error));
    res.locals.body = result.value;
    next();
  };
}

/** A known path asked with a method it does not take. */
export function methodNotAllowed(allowed: string[]): RequestHandler {
  return (_req, res, next) => {
    res.setHeader('Allow', allowed.join(', '));
    next(new AppError(405, { error: platformTexts.methodNotAllowed }));
  };
}
