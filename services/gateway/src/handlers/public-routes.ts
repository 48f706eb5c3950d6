import type { Bus } from '@inbox/bus';
import { AppError, sendMessageRule, validateBody } from '@inbox/contracts';
import { jsonBody } from '@inbox/service-kit';
import { Router } from 'express';
import type { WorkspaceStore } from '../store/workspaces.js';
import { apiV1AuthTexts, authenticate } from './authenticate.js';

export function publicRoutes(store: WorkspaceStore, bus: Bus, bodyLimit: string): Router {
  const router = Router();
  router.post(
    '/api/v1/send-message',
    authenticate(store, apiV1AuthTexts),
    jsonBody(bodyLimit),
    async (req, res) => {
      const body = validateBody(sendMessageRule, req.body);
      if (!body.ok) throw AppError.badRequest(body.error);
      const result = await bus.request('cmd.messaging.send-message', {
        ...body.value,
        workspace: res.locals.workspace!,
      });
      res.status(200).json(result);
    },
  );
  return router;
}
