import type { Bus } from '@inbox/bus';
import {
  AppError,
  type ExternalSendBody,
  externalSendRule,
  type MoveLeadBody,
  moveLeadRule,
  platformTexts,
  type SendMessageBody,
  type SendTemplateBody,
  sendMessageRule,
  sendTemplateRule,
} from '@inbox/contracts';
import { jsonBody, type Logger } from '@inbox/service-kit';
import { Router } from 'express';
import { z } from 'zod';
import type { AuthFailureLimiter } from '../rate-limit/auth-failure-limiter.js';
import type { WorkspaceRateLimiter } from '../rate-limit/workspace-rate-limiter.js';
import { apiV1AuthTexts, authenticate, externalAuthTexts, type KeyResolver } from './authenticate.js';
import { type IdempotencyOptions, idempotency } from './idempotency.js';
import { rateLimit } from './rate-limit.js';
import { methodNotAllowed, validated } from './route-helpers.js';

export interface PublicRouteDeps {
  keys: KeyResolver;
  authFailures: AuthFailureLimiter;
  limiter: WorkspaceRateLimiter;
  idempotency: Omit<IdempotencyOptions, 'logger'>;
  bus: Bus;
  bodyLimit: string;
  logger: Logger;
}

const uuid = z.uuid();

/**
 * The public API. Every route decides in the spec's order: key, workspace status, rate limit (not on
 * external send), body, then Idempotency-Key, and only then asks the owning service.
 */
export function publicRoutes(deps: PublicRouteDeps): Router {
  const router = Router();
  const v1Auth = authenticate(deps.keys, deps.authFailures, apiV1AuthTexts);
  const limited = rateLimit(deps.limiter);
  const body = jsonBody(deps.bodyLimit);
  const once = idempotency({ ...deps.idempotency, logger: deps.logger });

  router
    .route('/api/v1/send-message')
    .post(
      v1Auth,
      limited,
      body,
      validated(sendMessageRule),
      once('send-message', async (_req, res) => {
        const input = res.locals.body as SendMessageBody;
        res.json(
          await deps.bus.request('cmd.messaging.send-message', {
            ...input,
            workspace: res.locals.workspace!,
          }),
        );
      }),
    )
    .all(methodNotAllowed(['POST']));

  router
    .route('/api/v1/send-template')
    .post(
      v1Auth,
      limited,
      body,
      validated(sendTemplateRule),
      once('send-template', async (_req, res) => {
        const input = res.locals.body as SendTemplateBody;
        res.json(
          await deps.bus.request('cmd.messaging.send-template', {
            ...input,
            workspace: res.locals.workspace!,
          }),
        );
      }),
    )
    .all(methodNotAllowed(['POST']));

  router
    .route('/api/external/messages/send')
    .post(
      authenticate(deps.keys, deps.authFailures, externalAuthTexts),
      body,
      validated(externalSendRule),
      once('external-send', async (_req, res) => {
        const input = res.locals.body as ExternalSendBody;
        res.json(
          await deps.bus.request('cmd.messaging.external-send', {
            ...input,
            workspace_id: res.locals.workspaceId!,
          }),
        );
      }),
    )
    .all(methodNotAllowed(['POST']));

  router
    .route('/api/v1/leads/:id')
    .patch(
      v1Auth,
      limited,
      (req, _res, next) =>
        next(
          uuid.safeParse(req.params.id).success
            ? undefined
            : AppError.badRequest(platformTexts.mustBeUuid('id')),
        ),
      body,
      validated(moveLeadRule),
      async (req, res) => {
        const input = res.locals.body as MoveLeadBody;
        res.json(
          await deps.bus.request('cmd.pipeline.move-lead', {
            ...input,
            workspace_id: res.locals.workspaceId!,
            contact_id: req.params.id as string,
            moved_by: res.locals.keyHint ?? 'api',
          }),
        );
      },
    )
    .all(methodNotAllowed(['PATCH']));

  return router;
}
