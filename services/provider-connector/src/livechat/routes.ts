import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Bus } from '@inbox/bus';
import { hasCharacters, platformTexts } from '@inbox/contracts';
import { type OutboxRelay, type Pool, storableText, withTransaction } from '@inbox/db';
import { answerJson, clientAddress, inRequestContext, type Logger } from '@inbox/service-kit';
import { traceAdmitted } from '@inbox/telemetry';
import express, { type NextFunction, type Request, type Response, Router } from 'express';
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import { CallbackAdmission, defaultCallbackLimits } from '../handlers/callback-admission.js';
import { logNotes, recordInTransaction, recordNotes } from '../handlers/inbound.js';
import type { CallbackIntegration, IntegrationStore } from '../store/integrations.js';
import { announce } from './delivery.js';
import { demoPage } from './demo-page.js';
import { originAllowed } from './origins.js';
import { SessionBudgets } from './session-budgets.js';
import { bearerToken } from './session-token.js';
import type { LivechatStore } from './store.js';
import { type LivechatStreams, lastSeenSeq } from './streams.js';

export interface LivechatDeps {
  pool: Pool;
  bus: Bus;
  relay: OutboxRelay;
  logger: Logger;
  store: IntegrationStore;
  livechat: LivechatStore;
  streams: LivechatStreams;
  limits?: Partial<LivechatLimits>;
}

export interface LivechatLimits {
  /** Sessions one address may open for one integration, per minute. */
  sessionsPerMinute: number;
  /**
   * Sessions one network (an IPv4 /24, an IPv6 /48) may open for one integration, per minute: a client
   * rotating addresses within its network spends this one, and needs several networks to spend the
   * integration's, which every visitor of the site shares.
   */
  sessionsPerNetwork: number;
  /**
   * Sessions all addresses may open for one integration, per minute: a session costs a name, and each is
   * a row kept a month (retention.ts), so rotating addresses filled the table at will.
   */
  sessionsPerIntegration: number;
  /** Sessions all of a workspace's widgets may open per minute, however many integrations it creates. */
  sessionsPerWorkspace: number;
  /** Messages one session may post per 30 seconds. */
  messagesPerSession: number;
  /**
   * Messages all sessions of one integration may post per minute (a page hammering the chat). Not per
   * origin: a client other than a browser sends whichever listed Origin it likes, so a budget per origin
   * was one per origin the tenant listed.
   */
  messagesPerIntegration: number;
  /**
   * Messages all of a workspace's widgets may post per minute: each is a transaction and an event in the
   * connector's one outbox, and a tenant's hundred integrations flooding their own widgets from rotating
   * addresses held everyone else's inbound behind theirs.
   */
  messagesPerWorkspace: number;
  /** Stream connections per session per minute (a widget reconnecting in a loop). */
  streamsPerSession: number;
}

export const defaultLivechatLimits: LivechatLimits = {
  sessionsPerMinute: 10,
  sessionsPerNetwork: 100,
  sessionsPerIntegration: 600,
  sessionsPerWorkspace: 3_000,
  messagesPerSession: 20,
  messagesPerIntegration: 600,
  messagesPerWorkspace: 3_000,
  streamsPerSession: 30,
};

/**
 * A visitor's name and text in characters (code points); the body room for a text of 4,096 characters of
 * four UTF-8 bytes each, as the widget's JSON.stringify writes an emoji, with its wrapper.
 */
export const livechatBounds = { nameChars: 80, textChars: 4096, bodyBytes: 20 * 1024 } as const;

/** Where the widget's API for one integration lives on the connector. */
export function livechatPath(integrationId: string, action: 'sessions' | 'messages' | 'stream' | 'demo') {
  return `/livechat/${integrationId}/${action}`;
}

const asset = (name: string) => readFileSync(new URL(`./widget/${name}`, import.meta.url), 'utf8');

const refuse = (res: Response, status: number, error: string) => answerJson(res, status, { error });

/**
 * The live chat widget's public API. Everything in a request is hostile: the integration must be a
 * connected livechat one, the browser's Origin one it lists (anything else is refused, preflight
 * included, and gets no CORS headers), bodies are small JSON, sessions are bearer tokens kept only as
 * digests, and sessions, origins and addresses have budgets.
 */
export function livechatRoutes(deps: LivechatDeps): Router {
  const limits = { ...defaultLivechatLimits, ...deps.limits };
  const router = Router();
  // Each address has its own budget within the integration (the integration's id is in every page that
  // embeds the widget: a budget it alone keyed would be anyone's to spend); an address guessing ids is
  // blocked as for callbacks. A whole office behind one address gets what a busy site needs.
  const admission = new CallbackAdmission(
    deps.store,
    deps.logger,
    // Its event streams stay open as long as a visitor's page does, and its visitors are a site's
    // public: sessions, origins and streams have budgets of their own (below), and hold nothing of the
    // workspace's.
    {
      ...defaultCallbackLimits,
      perSecond: 200,
      burst: 1000,
      workspacePerSecond: Number.POSITIVE_INFINITY,
      perWorkspaceInFlight: Number.POSITIVE_INFINITY,
    },
    'address',
  );
  const budget = (keyPrefix: string, points: number, duration: number) =>
    new RateLimiterMemory({ keyPrefix, points, duration });
  const sessionBudgets = new SessionBudgets({
    perAddress: limits.sessionsPerMinute,
    perNetwork: limits.sessionsPerNetwork,
    perIntegration: limits.sessionsPerIntegration,
    perWorkspace: limits.sessionsPerWorkspace,
  });
  const messageBudget = budget('livechat-messages', limits.messagesPerSession, 30);
  const integrationBudget = budget('livechat-integration', limits.messagesPerIntegration, 60);
  const workspaceBudget = budget('livechat-workspace', limits.messagesPerWorkspace, 60);
  const streamBudget = budget('livechat-streams', limits.streamsPerSession, 60);
  const found = new WeakMap<Request, CallbackIntegration>();
  const script = asset('widget.js');
  const stylesheet = asset('widget.css');

  const spend = async (res: Response, limiter: RateLimiterMemory, key: string): Promise<boolean> => {
    try {
      await limiter.consume(key);
      return true;
    } catch (error) {
      if (!(error instanceof RateLimiterRes)) throw error;
      res.setHeader('Retry-After', String(Math.max(1, Math.ceil(error.msBeforeNext / 1000))));
      refuse(res, 429, platformTexts.livechatTooMany);
      return false;
    }
  };

  router.get('/livechat/widget.js', (_req, res) => {
    res.type('text/javascript').setHeader('Cache-Control', 'public, max-age=300').send(script);
  });
  router.get('/livechat/widget.css', (_req, res) => {
    res.type('text/css').setHeader('Cache-Control', 'public, max-age=300').send(stylesheet);
  });

  /** A connected livechat integration, and a browser origin it lists; CORS headers for that origin. */
  const admit = async (req: Request, res: Response, next: NextFunction) => {
    const { integrationId } = req.params as { integrationId: string };
    const address = clientAddress(req.ip ?? req.socket.remoteAddress);
    const decision = await admission.admit('livechat', integrationId, address);
    if (!decision.admitted) {
      if (decision.status === 429) res.setHeader('Retry-After', String(decision.retryAfterSeconds));
      refuse(
        res,
        decision.status,
        decision.status === 429 ? platformTexts.livechatTooMany : platformTexts.livechatUnknown,
      );
      return;
    }
    if (decision.stored.integration.channel !== 'livechat') {
      refuse(res, 404, platformTexts.livechatUnknown);
      return;
    }
    const origin = req.get('origin');
    res.setHeader('Vary', 'Origin');
    // Browsers send Origin on every cross-origin request and on same-origin POSTs; a same-origin GET
    // (the demo page's stream) has none, and its session token is what admits it.
    const sameOriginRead = origin === undefined && req.method === 'GET';
    if (!sameOriginRead && !originAllowed(decision.stored.config, origin)) {
      deps.logger.warn(
        { integration_id: integrationId, origin: origin?.slice(0, 200) },
        'live chat origin refused',
      );
      refuse(res, 403, platformTexts.livechatOriginRefused);
      return;
    }
    if (origin) res.setHeader('Access-Control-Allow-Origin', origin);
    found.set(req, decision.stored);
    traceAdmitted(req, res, next);
  };

  router.options('/livechat/:integrationId/:action', admit, (_req, res) => {
    res.setHeader('Access-Control-Allow-Methods', 'GET, POST');
    res.setHeader('Access-Control-Allow-Headers', 'Authorization, Content-Type, Last-Event-ID');
    res.setHeader('Access-Control-Max-Age', '600');
    res.status(204).end();
  });

  const json = inRequestContext(express.json({ limit: livechatBounds.bodyBytes, type: () => true }));
  const field = (body: unknown, key: string, maxChars: number): string | undefined => {
    const value =
      typeof body === 'object' && body !== null ? (body as Record<string, unknown>)[key] : undefined;
    if (typeof value !== 'string') return undefined;
    // Control characters have no place in a chat line; names are one line.
    const visible = value.replace(
      key === 'name' ? /[\p{Cc}]/gu : /[^\P{Cc}\n\t]/gu,
      key === 'name' ? ' ' : '',
    );
    const clean = storableText(visible).trim();
    return hasCharacters(clean, 1, maxChars) ? clean : undefined;
  };

  router.post('/livechat/:integrationId/sessions', admit, json, async (req, res) => {
    const stored = found.get(req)!;
    const origin = req.get('origin')!;
    // Checked first: a request that opens nothing spends nobody's budget.
    const name = field(req.body, 'name', livechatBounds.nameChars);
    if (!name) {
      refuse(res, 400, platformTexts.livechatNameInvalid);
      return;
    }
    // An address's budget is by address, not by origin: outside a browser a caller writes whichever
    // Origin the integration lists, and a budget per origin gave it one budget for each.
    const waitSeconds = await sessionBudgets.spend(
      stored.integration.id,
      stored.workspaceId,
      clientAddress(req.ip),
    );
    if (waitSeconds !== undefined) {
      res.setHeader('Retry-After', String(waitSeconds));
      refuse(res, 429, platformTexts.livechatTooMany);
      return;
    }
    const { session, token } = await deps.livechat.createSession(stored.integration.id, name, origin);
    res.status(201).json({ session_id: session.id, token, name: session.visitor_name });
  });

  /** The session the bearer token names, within this integration. */
  const session = async (req: Request, res: Response) => {
    const token = bearerToken(req.get('authorization'));
    const known = token
      ? await deps.livechat.sessionByToken(found.get(req)!.integration.id, token)
      : undefined;
    if (!known) refuse(res, 401, platformTexts.livechatSessionInvalid);
    return known;
  };

  router.post('/livechat/:integrationId/messages', admit, json, async (req, res) => {
    const stored = found.get(req)!;
    const visitor = await session(req, res);
    if (!visitor) return;
    if (!(await spend(res, messageBudget, visitor.id))) return;
    if (!(await spend(res, integrationBudget, stored.integration.id))) return;
    if (!(await spend(res, workspaceBudget, stored.workspaceId))) return;
    const text = field(req.body, 'text', livechatBounds.textChars);
    if (!text) {
      refuse(res, 400, platformTexts.livechatTextInvalid);
      return;
    }
    const id = randomUUID();
    const notes = recordNotes();
    const added = await withTransaction(deps.pool, async (client) => {
      // Pruned since it was found live (a day past its end: retention.ts): nothing of it is recorded.
      if (!(await deps.livechat.addMessage(client, visitor.id, { id, author: 'visitor', text })))
        return false;
      await recordInTransaction(
        client,
        stored,
        {
          messages: [
            {
              providerMessageId: id,
              from: visitor.id,
              keyedBy: 'user_id',
              name: visitor.visitor_name,
              text,
              type: 'text',
              sentAt: new Date(),
            },
          ],
          statuses: [],
        },
        notes,
      );
      return true;
    });
    if (!added) {
      refuse(res, 401, platformTexts.livechatSessionInvalid);
      return;
    }
    logNotes(deps.logger, stored, notes);
    deps.relay.wake();
    await announce(deps, visitor.id);
    res.status(202).json({ id });
  });

  router.get('/livechat/:integrationId/stream', admit, async (req, res) => {
    const visitor = await session(req, res);
    if (!visitor) return;
    if (!(await spend(res, streamBudget, visitor.id))) return;
    res.status(200);
    res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('X-Accel-Buffering', 'no');
    res.flushHeaders();
    // Tells EventSource clients how soon to come back; our widget does the same on its own.
    res.write('retry: 2000\n\n');
    if (
      !deps.streams.attach(
        {
          integrationId: found.get(req)!.integration.id,
          workspaceId: found.get(req)!.workspaceId,
          address: clientAddress(req.ip ?? req.socket.remoteAddress),
        },
        visitor.id,
        res,
        lastSeenSeq(req.get('last-event-id')),
      )
    ) {
      res.end();
    }
  });

  router.get('/livechat/:integrationId/demo', admit, (req, res) => {
    const stored = found.get(req)!;
    res.setHeader(
      'Content-Security-Policy',
      "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'",
    );
    res.type('html').send(demoPage(stored.integration.id, stored.config.name ?? 'Live chat'));
  });

  return router;
}
