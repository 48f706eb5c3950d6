import { AppError, errorTexts, type KeyTexts, type WorkspaceContext } from '@inbox/contracts';
import { annotateServerSpan } from '@inbox/telemetry';
import type { RequestHandler } from 'express';
import { apiKeyCacheKey, bearerToken, looksLikeApiKey } from '../domain/api-key.js';
import type { CachedWorkspace, KeyCache } from '../domain/key-cache.js';
import type { AuthFailureLimiter } from '../rate-limit/auth-failure-limiter.js';
import type { WorkspaceStore } from '../store/workspaces.js';
import { authenticationFailed, refusedClient } from './auth-failures.js';

declare global {
  namespace Express {
    interface Locals {
      workspace?: WorkspaceContext;
      keyHint?: string;
    }
  }
}

export class KeyResolver {
  /**
   * Lookups under way, so that concurrent requests with one key share one query. Keyed by cache epoch
   * too: a request that arrives after an invalidation must not take an answer read before it.
   */
  private readonly lookups = new Map<string, Promise<CachedWorkspace | null>>();

  constructor(
    private readonly store: WorkspaceStore,
    private readonly cache: KeyCache,
  ) {}

  /** What this process knows of the key without asking the database; see KeyCache.get. */
  cached(apiKey: string): CachedWorkspace | null | undefined {
    return this.cache.get(apiKeyCacheKey(apiKey));
  }

  /** See KeyCache.foundLately. */
  foundLately(apiKey: string): boolean {
    return this.cache.foundLately(apiKeyCacheKey(apiKey));
  }

  /** The key's workspace, or null when the key belongs to none. */
  async resolve(apiKey: string): Promise<CachedWorkspace | null> {
    const cacheKey = apiKeyCacheKey(apiKey);
    const cached = this.cache.get(cacheKey);
    if (cached !== undefined) return cached;
    const epoch = this.cache.epoch;
    const lookupKey = `${epoch}:${cacheKey}`;
    let lookup = this.lookups.get(lookupKey);
    if (!lookup) {
      lookup = this.lookUp(cacheKey, epoch).finally(() => this.lookups.delete(lookupKey));
      this.lookups.set(lookupKey, lookup);
    }
    return lookup;
  }

  private async lookUp(cacheKey: string, epoch: number): Promise<CachedWorkspace | null> {
    const found = await this.store.findByKeyDigest(Buffer.from(cacheKey, 'base64'));
    if (!found) {
      this.cache.setUnknown(cacheKey, epoch);
      return null;
    }
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

/**
 * Resolves the API key to its workspace and refuses inactive or suspended workspaces. Keys that cost a
 * lookup and name no workspace count against the caller's address (AuthFailureLimiter); a missing or
 * malformed one costs nothing and does not count. An address over its budget may still use a key this
 * process knows or found lately, but gets no database lookup for any other.
 */
export function authenticate(
  keys: KeyResolver,
  failures: AuthFailureLimiter,
  texts: KeyTexts,
): RequestHandler {
  return async (req, res, next) => {
    const header = req.get('authorization');
    if (!header) return next(new AppError(401, { error: texts.missing }));
    const key = bearerToken(header);
    if (!key || !looksLikeApiKey(key)) return next(new AppError(401, { error: texts.invalid }));
    let workspace = keys.cached(key);
    if (workspace === undefined) {
      const refused = keys.foundLately(key) ? undefined : await refusedClient(failures, req, res);
      if (refused) return next(refused);
      workspace = await keys.resolve(key);
    }
    if (!workspace)
      return next(
        await authenticationFailed(failures, req, res, new AppError(401, { error: texts.invalid })),
      );
    res.locals.workspaceId = workspace.id;
    annotateServerSpan({ 'workspace.id': workspace.id });
    if (workspace.status !== 'active')
      return next(new AppError(403, { error: errorTexts.workspaceInactive }));
    res.locals.workspace = { id: workspace.id, default_country_code: workspace.default_country_code };
    res.locals.keyHint = workspace.key_hint;
    next();
  };
}
