import { AppError, platformTexts } from '@inbox/contracts';
import { clientAddress } from '@inbox/service-kit';
import type { Request, Response } from 'express';
import type { AuthFailureLimiter } from '../rate-limit/auth-failure-limiter.js';

function tooManyFailures(res: Response, seconds: number): AppError {
  res.setHeader('Retry-After', String(seconds));
  return new AppError(429, { error: platformTexts.authFailuresTooMany });
}

/** A 429 when the caller's address is refused for failing authentication too often; otherwise undefined. */
export async function refusedClient(
  failures: AuthFailureLimiter,
  req: Request,
  res: Response,
): Promise<AppError | undefined> {
  const seconds = await failures.refusedFor(clientAddress(req.ip));
  return seconds > 0 ? tooManyFailures(res, seconds) : undefined;
}

/**
 * Counts a failed authentication against the caller's address and answers it: the given 401 while the
 * address is within its budget, so a caller with a wrong key reads the spec's text, then 429.
 */
export async function authenticationFailed(
  failures: AuthFailureLimiter,
  req: Request,
  res: Response,
  unauthorized: AppError,
): Promise<AppError> {
  const seconds = await failures.failed(clientAddress(req.ip));
  return seconds > 0 ? tooManyFailures(res, seconds) : unauthorized;
}
