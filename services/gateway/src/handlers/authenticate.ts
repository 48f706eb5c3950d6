import { AppError, errorTexts, type WorkspaceContext } from '@inbox/contracts';
import { annotateActiveSpan } from '@inbox/telemetry';
import type { RequestHandler } from 'express';
import { bearerToken, hashApiKey, looksLikeApiKey } from '../domain/api-key.js';
import type { CachedWorkspace, KeyCache } from '../domain/key-cache.js';
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
      keyHint?: string;
    }
  }
}

export class KeyResolver {
  constructor(
    private readonly store: WorkspaceStore,
    private readonly cache: KeyCache,
  ) {}

  async resolve(apiKey: string): Promise<CachedWorkspace | undefined> {
    const digest = hashApiKey(apiKey);
    const cacheKey = digest.toString('base64');
    const cached = this.cache.get(cacheKey);
    if (cached) return cached;
    const epoch = this.cache.epoch;
    const found = await this.store.findByKeyDigest(digest);
    if (!found) return undefined;
    const workspace: CachedWorkspace = {
      id: found.id,
      status: found.status,
      default_country_code: found.default_country_code,
      key_hint: found.key_hint,
    };
    this.cache.set(cacheKey, workspace, epoch);
    return workspace;
  }
}

/** Resolves the API key to its workspace and refuses inactive or suspended workspaces. */
export function authenticate(keys: KeyResolver, texts: AuthTexts): RequestHandler {
  return async (req, res, next) => {
    const header = req.get('authorization');
    if (!header) return next(new AppError(401, { error: texts.missing }));
    const key = bearerToken(header);
    if (!key || !looksLikeApiKey(key)) return next(new AppError(401, { error: texts.invalid }));
    const workspace = await keys.resolve(key);
    if (!workspace) return next(new AppError(401, { error: texts.invalid }));
    res.locals.workspaceId = workspace.id;
    annotateActiveSpan({ 'workspace.id': workspace.id });
    if (workspace.status !== 'active')
      return next(new AppError(403, { error: errorTexts.workspaceInactive }));
    res.locals.workspace = { id: workspace.id, default_country_code: workspace.default_country_code };
    res.locals.keyHint = workspace.key_hint;
    next();
  };
}
