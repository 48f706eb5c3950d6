import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { AppError, errorTexts, maxJsonBodyDepth, platformTexts } from '@inbox/contracts';
import {
  annotateServerSpan,
  bindToActiveContext,
  bindToServerSpan,
  meter,
  serveMetrics,
  serverSpanRouteSetter,
  traceIncoming,
  traceIncomingOnceAdmitted,
} from '@inbox/telemetry';
import express, {
  type ErrorRequestHandler,
  type Express as ExpressApp,
  type RequestHandler,
  type Response,
} from 'express';
import type { Logger } from 'pino';
import { nestsDeeperThan } from './json-depth.js';

export type ReadinessChecks = Record<string, () => Promise<boolean> | boolean>;

export interface HttpAppOptions {
  logger: Logger;
  readiness?: ReadinessChecks;
  /** Largest JSON body accepted; larger ones get a 413 ErrorResponse. */
  bodyLimit?: string;
  /**
   * Parse JSON bodies for every route. The gateway turns this off and parses after authentication,
   * so a caller without a valid key learns nothing from how its body is judged.
   */
  parseJson?: boolean;
  /**
   * When a request's server span starts: on arrival (the default), or once a route admits it
   * (`traceAdmitted`), so that what is refused at the door is not traced. The gateway takes the second.
   */
  traceFrom?: 'arrival' | 'admission';
  /** Which peers may name the client in X-Forwarded-For (`TrustProxy`); `defaultTrustedProxies` if unset. */
  trustProxy?: TrustProxy;
}

/** Express's `trust proxy` setting: a hop count, every peer (true), or the proxies' addresses, CIDRs or names. */
export type TrustProxy = boolean | number | string;

/**
 * Peers on loopback and private networks: an ingress or load balancer in the cluster, which names the
 * client it forwards. Without it every caller behind the ingress has the ingress's address, and a limit
 * per client address is one limit for all of them: one caller spraying wrong keys or unknown callback
 * URLs would have everyone refused. A client reaching a service from a public address is counted under
 * that address, whatever it claims.
 */
export const defaultTrustedProxies: TrustProxy = 'loopback, linklocal, uniquelocal';

/**
 * A JSON answer, as express's `res.json` writes it (the status, `application/json; charset=utf-8`, the
 * length) without its `send`, which parses and formats the content type again on every answer and
 * looks the type up in the MIME table. For a refusal at the door that was about a fifth of the gateway's
 * CPU (bench/RESULTS.md, eleventh session). ETags are off in every service, so `send` added nothing else;
 * a HEAD request gets the headers alone, as node:http drops its body.
 */
function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body) ?? '';
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(text));
  res.end(text);
}

/**
 * A JSON answer (`sendJson`), or, for a response whose `json` a handler wrapped for itself (the gateway's
 * idempotency record, which keeps what was answered), through that wrapper.
 */
export function answerJson(res: Response, status: number, body: unknown): void {
  if (Object.hasOwn(res, 'json')) res.status(status).json(body);
  else sendJson(res, status, body);
}

/**
 * The JSON body parser with the service's limit, for routes that parse after other checks. A body that
 * nests deeper than any request of the API does is refused with a 400 before a handler walks it.
 */
export function jsonBody(limit: string | number = '256kb'): RequestHandler {
  // Not inflated: a few hundred bytes of gzip can be the whole limit to parse, on routes with no budget
  // of their own (external send); no caller of ours compresses what it sends (415).
  const parse = express.json({ limit, inflate: false, type: ['application/json', 'application/*+json'] });
  return inRequestContext((req, res, next) =>
    parse(req, res, (error?: unknown) => {
      if (error) return next(error);
      if (nestsDeeperThan(req.body, maxJsonBodyDepth))
        return next(AppError.badRequest(platformTexts.bodyTooDeep(maxJsonBodyDepth)));
      next();
    }),
  );
}

/**
 * A body parser whose `next` runs in the request's trace context: it calls `next` from the body's `end`
 * event, which fires in the connection's context, so what follows would otherwise leave the trace.
 */
export function inRequestContext(parser: RequestHandler): RequestHandler {
  return (req, res, next) => parser(req, res, bindToActiveContext(next));
}

declare global {
  namespace Express {
    interface Request {
      id: string;
    }
    interface Locals {
      workspaceId?: string;
    }
  }
}

const requestDuration = meter('http').createHistogram('http.server.request.duration', {
  description: 'Duration of HTTP requests served, by route and status',
  unit: 's',
});

function accessLog(logger: Logger): RequestHandler {
  return (req, res, next) => {
    const started = process.hrtime.bigint();
    const incoming = req.get('x-request-id');
    req.id = incoming && /^[\w.-]{1,128}$/.test(incoming) ? incoming : randomUUID();
    res.setHeader('X-Request-Id', req.id);
    annotateServerSpan({ 'request.id': req.id });
    const nameServerSpan = serverSpanRouteSetter();
    // Bound: the line carries the request's trace id whatever context the response finishes in.
    res.on(
      'finish',
      bindToServerSpan(() => {
        const seconds = Number(process.hrtime.bigint() - started) / 1e9;
        // The route pattern, never the raw path: ids in paths would make every request its own series.
        const route = req.route
          ? `${req.baseUrl}${req.route.path}`
          : res.statusCode === 404
            ? 'unknown'
            : req.baseUrl || 'unknown';
        nameServerSpan(route);
        requestDuration.record(seconds, {
          'http.request.method': req.method,
          'http.route': route,
          'http.response.status_code': res.statusCode,
        });
        logger.info(
          {
            method: req.method,
            // An unmatched path is the caller's, up to the header limit: a line of its first 200 characters.
            route: req.route?.path ?? req.path.slice(0, 200),
            status: res.statusCode,
            duration_ms: Number(process.hrtime.bigint() - started) / 1e6,
            request_id: req.id,
            workspace_id: res.locals.workspaceId,
          },
          'request',
        );
      }),
    );
    next();
  };
}

/**
 * The HTTP base every service shares: request ids, one access log line per request, a JSON body limit,
 * and the operational routes. Mount the service's routes, then call `finishHttpApp`.
 */
export function createHttpApp({
  logger,
  readiness = {},
  bodyLimit = '256kb',
  parseJson = true,
  traceFrom = 'arrival',
  trustProxy = defaultTrustedProxies,
}: HttpAppOptions): ExpressApp {
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', trustProxy);
  app.set('etag', false);
  // Probes and scrapes come first, so they are neither traced nor logged: the kubelet and Prometheus
  // call every pod every few seconds, and a trace or an access line per call would bury the requests.
  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  app.get('/readyz', async (_req, res) => {
    const results = Object.fromEntries(
      await Promise.all(
        Object.entries(readiness).map(async ([name, check]) => [
          name,
          await Promise.resolve(check()).catch(() => false),
        ]),
      ),
    );
    const ready = Object.values(results).every(Boolean);
    res.status(ready ? 200 : 503).json({ status: ready ? 'ready' : 'not ready', checks: results });
  });
  app.get('/metrics', (req, res) => serveMetrics(req, res));
  app.use(traceFrom === 'arrival' ? traceIncoming : traceIncomingOnceAdmitted);
  app.use(accessLog(logger));
  if (parseJson) app.use(jsonBody(bodyLimit));
  return app;
}

/**
 * The ErrorResponse for whatever a handler threw or passed on. `finishHttpApp` puts it last in the app;
 * a router can also end each route's chain with it, so that a refusal (401, 400, 429) is answered within
 * its route instead of walking, path match by path match, past every later route to the app's.
 */
export function errorResponder(logger: Logger): ErrorRequestHandler {
  return (error, req, res, _next) => {
    if (res.headersSent) return;
    const answer = (status: number, body: unknown) => answerJson(res, status, body);
    if (error instanceof AppError) {
      // An owner that did not answer (503/504) is worth a line an operator can find by request id.
      if (error.status >= 500) {
        logger.warn({ err: error.cause ?? error, status: error.status, request_id: req.id }, error.message);
      }
      answer(error.status, error.body);
      return;
    }
    const type = (error as { type?: string }).type;
    if (type === 'entity.parse.failed') {
      answer(400, { error: platformTexts.malformedJson });
      return;
    }
    if (type === 'entity.too.large') {
      answer(413, { error: platformTexts.bodyTooLarge });
      return;
    }
    if (type === 'encoding.unsupported') {
      answer(415, { error: platformTexts.bodyEncodingUnsupported });
      return;
    }
    const status = (error as { status?: number }).status;
    if (typeof status === 'number' && status >= 400 && status < 500) {
      answer(status, { error: (error as Error).message });
      return;
    }
    const errorId = randomUUID();
    logger.error({ err: error, error_id: errorId, request_id: req.id }, 'unhandled error');
    answer(500, { error: errorTexts.internal, error_id: errorId });
  };
}

export function finishHttpApp(app: ExpressApp, logger: Logger): ExpressApp {
  app.use((_req, res) => {
    sendJson(res, 404, { error: platformTexts.routeNotFound });
  });
  app.use(errorResponder(logger));
  return app;
}
