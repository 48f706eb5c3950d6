import { AppError, platformTexts } from '@inbox/contracts';
import { sameSecret } from '@inbox/service-kit';
import type { RequestHandler } from 'express';
import { bearerToken } from '../domain/api-key.js';
import type { AuthFailureLimiter } from '../rate-limit/auth-failure-limiter.js';
import { authenticationFailed, refusedClient } from './auth-failures.js';

/**
 * The admin token, guessed by nobody: an address that failed too often is refused before its token is
 * even compared, so that a guess cannot be told right from wrong while it is refused.
 */
export function requireAdmin(adminToken: string, failures: AuthFailureLimiter): RequestHandler {
  return async (req, res, next) => {
    const refused = await refusedClient(failures, req, res);
    if (refused) return next(refused);
    const token = bearerToken(req.get('authorization'));
    if (!token || !sameSecret(token, adminToken)) {
      const unauthorized = new AppError(401, { error: platformTexts.adminTokenInvalid });
      return next(await authenticationFailed(failures, req, res, unauthorized));
    }
    next();
  };
}
