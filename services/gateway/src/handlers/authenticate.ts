import { AppError, errorTexts, type WorkspaceContext } from '@inbox/contracts';
import type { RequestHandler } from 'express';
import { bearerToken, looksLikeApiKey } from '../domain/api-key.js';
import type { WorkspaceStore } from '../store/workspaces.js';

export interface AuthTexts {
  missing: string;
  invalid: string;
}

/** send-message, send-template and leads answer one text for every key problem. */
export const apiV1AuthTexts: AuthTexts = {
  missing: errorTexts.apiKeyInvalid,
  invalid: errorTexts.apiKeyInvalid,
};
/** external send tells a missing header apart from an unknown key. */
export const externalAuthTexts: AuthTexts = {
  missing: errorTexts.authorizationMissing,
  invalid: errorTexts.apiKeyNotFound,
};

declare global {
  namespace Express {
    interface Locals {
      workspace?: WorkspaceContext;
    }
  }
}

/** Resolves the API key to its workspace and refuses inactive or suspended workspaces. */
export function authenticate(store: WorkspaceStore, texts: AuthTexts): RequestHandler {
  return async (req, res, next) => {
    const header = req.get('authorization');
    if (!header) return next(new AppError(401, { error: texts.missing }));
    const key = bearerToken(header);
    if (!key || !looksLikeApiKey(key)) return next(new AppError(401, { error: texts.invalid }));
    const workspace = await store.findByKey(key);
    if (!workspace) return next(new AppError(401, { error: texts.invalid }));
    res.locals.workspaceId = workspace.id;
    if (workspace.status !== 'active')
      return next(new AppError(403, { error: errorTexts.workspaceInactive }));
    res.locals.workspace = { id: workspace.id, default_country_code: workspace.default_country_code };
    next();
  };
}
