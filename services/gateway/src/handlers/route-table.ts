import type { Bus } from '@inbox/bus';
import {
  AdminWorkspaceParams,
  AppError,
  adminBodyBytes,
  adminPrefix,
  apiV1KeyTexts,
  type CommandRoute,
  check,
  expressPath,
  isBodyRule,
  isCommandRoute,
  type LocalOperation,
  methodsByPath,
  platformTexts,
  publicBodyBytes,
  type RouteDefinition,
  type RouteInput,
  routes,
  validateBody,
} from '@inbox/contracts';
import { answerJson, errorResponder, jsonBody, type Logger } from '@inbox/service-kit';
import { traceAdmitted } from '@inbox/telemetry';
import { type Request, type RequestHandler, type Response, Router } from 'express';
import type { z } from 'zod';
import type { AuthFailureLimiter } from '../rate-limit/auth-failure-limiter.js';
import type { WorkspaceRateLimiter } from '../rate-limit/workspace-rate-limiter.js';
import type { WorkspaceStore } from '../store/workspaces.js';
import { requireAdmin } from './admin-token.js';
import { authenticate, type KeyResolver } from './authenticate.js';
import { type IdempotencyOptions, idempotency } from './idempotency.js';
import { localOperations } from './local-operations.js';
import { rateLimit } from './rate-limit.js';
import { methodNotAllowed } from './route-helpers.js';
import { setUnderWay, workspaceInFlight } from './workspace-in-flight.js';

export interface RouteTableDeps {
  keys: KeyResolver;
  store: WorkspaceStore;
  bus: Bus;
  adminToken: string;
  authFailures: AuthFailureLimiter;
  limiter: WorkspaceRateLimiter;
  idempotency: Omit<IdempotencyOptions, 'logger'>;
  logger: Logger;
  workspaceChanged(workspaceId: string): Promise<void>;
}

declare global {
  namespace Express {
    interface Locals {
      /** What the route's checks have accepted so far: path parameters, query, body. */
      input?: Pick<RouteInput, 'params' | 'query' | 'body'>;
    }
  }
}

/** The first of a schema's texts that the value breaks (each field carries its own), or the value. */
function parse<S extends z.ZodType>(schema: S, value: unknown): z.output<S> {
  const checked = check(schema, value ?? {});
  if (!checked.ok) throw AppError.badRequest(checked.error);
  return checked.value;
}

const inputOf = (res: Response) => (res.locals.input ??= { params: {}, query: {}, body: {} });

/**
 * Mounts the route table of @inbox/contracts. Every route decides in the spec's order: key, workspace
 * status, rate limit, path, body, then Idempotency-Key, and only then asks the owning service; a known
 * path asked with another method gets 405 with the table's `Allow`.
 */
export function routeTable(deps: RouteTableDeps): Router {
  const router = Router();
  const limited = rateLimit(deps.limiter);
  // One parser per limit the table names: the public routes read little, the admin API more.
  const parsers = new Map<number, RequestHandler>();
  const bodyOf = (bytes: number) => {
    let parser = parsers.get(bytes);
    if (!parser) {
      parser = jsonBody(bytes);
      parsers.set(bytes, parser);
    }
    return parser;
  };
  const once = idempotency({ ...deps.idempotency, logger: deps.logger });
  const local = localOperations(deps);
  // Each route answers its own refusals: an error passed on from a route would be matched against
  // every later route's path on its way to the app's error handler (a fifth of a refused request's CPU).
  const refusal = errorResponder(deps.logger);

  // Everything under the admin prefix, known path or not, needs the token first.
  router.use(
    adminPrefix,
    requireAdmin(deps.adminToken, deps.authFailures),
    traceAdmitted,
    bodyOf(adminBodyBytes),
  );

  /** The admin routes' workspace must exist; the public ones have theirs from the key. */
  const adminWorkspace: RequestHandler = async (req, res, next) => {
    const id = parse(AdminWorkspaceParams, req.params);
    const workspace = await deps.store.get(id.workspace_id);
    if (!workspace) return next(AppError.notFound(platformTexts.workspaceNotFound));
    res.locals.workspaceId = workspace.id;
    next();
  };

  const checkParams = (route: RouteDefinition): RequestHandler => {
    return (req, res, next) => {
      if (route.params) inputOf(res).params = parse(route.params, req.params);
      next();
    };
  };
  const checkQueryAndBody = (route: RouteDefinition): RequestHandler => {
    return (req, res, next) => {
      const input = inputOf(res);
      if (route.query) input.query = parse(route.query, req.query);
      if (route.body) {
        if (!isBodyRule(route.body)) input.body = parse(route.body, req.body) as Record<string, unknown>;
        else {
          const result = validateBody(route.body, req.body);
          if (!result.ok) return next(AppError.badRequest(result.error));
          input.body = result.value as Record<string, unknown>;
        }
      }
      next();
    };
  };

  const answer = (route: RouteDefinition): RequestHandler => {
    return async (req, res) => {
      const input: RouteInput = {
        ...inputOf(res),
        caller: {
          workspace: res.locals.workspace,
          workspace_id: res.locals.workspaceId!,
          key_hint: res.locals.keyHint ?? 'api',
        },
      };
      const data = await setUnderWay(
        res,
        isCommandRoute(route)
          ? deps.bus.request(route.command, withIdempotencyKey(route, req, commandRequest(route, input)))
          : local[route.local as LocalOperation](input),
      );
      answerJson(res, route.status ?? 200, data);
    };
  };

  for (const route of routes) {
    const handler = answer(route);
    const body = bodyOf(
      route.bodyBytes ?? (route.access === 'admin-token' ? adminBodyBytes : publicBodyBytes),
    );
    const chain: RequestHandler[] =
      route.access === 'admin-token'
        ? [...(route.params?.shape.workspace_id ? [adminWorkspace] : []), checkParams(route)]
        : route.access === 'workspace-key'
          ? [
              authenticate(deps.keys, deps.authFailures, route.keyTexts ?? apiV1KeyTexts),
              ...(route.rateLimited ? [limited] : []),
              ...(route.inFlightPerWorkspace ? [workspaceInFlight(route.inFlightPerWorkspace)] : []),
              checkParams(route),
              body,
            ]
          : [checkParams(route), body];
    // The span starts once the door's checks have passed: an invalid input's span would tell little its
    // access line does not, for a fifth of the refusal's CPU (ADR 0012).
    chain.push(checkQueryAndBody(route), traceAdmitted);
    chain.push(route.idempotent ? once(idempotencyScope(route as CommandRoute), handler) : handler);
    router[route.method](expressPath(route.path), ...chain, refusal);
  }

  for (const [path, methods] of methodsByPath()) {
    const adminPath = path.startsWith(adminPrefix);
    // As for a route of the path: an admin path names a workspace that must exist before anything else.
    const before = adminPath && path.includes('{workspace_id}') ? [adminWorkspace] : [];
    router.all(expressPath(path), ...before, methodNotAllowed(methods.map((m) => m.toUpperCase())));
  }
  return router;
}

/** A route with no `request` of its own hands the owner its path, query and body, and the workspace. */
function commandRequest(route: CommandRoute, input: RouteInput): never {
  if (route.request) return route.request(input) as never;
  return { ...input.params, ...input.query, ...input.body, workspace_id: input.caller.workspace_id } as never;
}

/**
 * The caller's Idempotency-Key goes on to the owner of the side effect, scoped as here, so a retry that
 * the gateway can no longer answer from its own record (it died mid-request) finds the first attempt there.
 */
function withIdempotencyKey(route: CommandRoute, req: Request, payload: never): never {
  const key = route.idempotent ? req.get('idempotency-key') : undefined;
  if (!key) return payload;
  return { ...(payload as object), idempotency_key: `${idempotencyScope(route)}:${key}` } as never;
}

/** Keys are scoped by what they ask for (the command's verb), so one key cannot replay another call's answer. */
const idempotencyScope = (route: CommandRoute) => route.command.split('.').at(-1)!;
