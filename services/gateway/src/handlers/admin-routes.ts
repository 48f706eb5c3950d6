import type { Bus } from '@inbox/bus';
import {
  AddStageBody,
  AppError,
  AssignBody,
  ConversationPage,
  CreateAgentBody,
  CreateIntegrationBody,
  CreateMemberBody,
  CreatePipelineBody,
  CreateWebhookBody,
  CreateWorkspaceBody,
  DeliveryQuery,
  platformTexts,
  RenamePipelineBody,
  RenameStageBody,
  ReorderStagesBody,
  ReplayBody,
  RotateSecretBody,
  UpdateIntegrationBody,
  UpdateWebhookBody,
  UpdateWorkspaceBody,
} from '@inbox/contracts';
import { jsonBody } from '@inbox/service-kit';
import { type RequestHandler, Router } from 'express';
import { z } from 'zod';
import { bearerToken, constantTimeEqual } from '../domain/api-key.js';
import type { AuthFailureLimiter } from '../rate-limit/auth-failure-limiter.js';
import type { WorkspaceStore } from '../store/workspaces.js';
import { authenticationFailed, refusedClient } from './auth-failures.js';
import { methodNotAllowed } from './route-helpers.js';

function parse<S extends z.ZodType>(schema: S, body: unknown): z.output<S> {
  const parsed = schema.safeParse(body ?? {});
  if (!parsed.success) throw AppError.badRequest(parsed.error.issues[0]?.message ?? 'corpo inválido');
  return parsed.data;
}

/**
 * The admin token, guessed by nobody: an address that failed too often is refused before its token is
 * even compared, so that a guess cannot be told right from wrong while it is refused.
 */
function requireAdmin(adminToken: string, failures: AuthFailureLimiter): RequestHandler {
  return async (req, res, next) => {
    const refused = await refusedClient(failures, req, res);
    if (refused) return next(refused);
    const token = bearerToken(req.get('authorization'));
    if (!token || !constantTimeEqual(token, adminToken)) {
      const unauthorized = new AppError(401, { error: platformTexts.adminTokenInvalid });
      return next(await authenticationFailed(failures, req, res, unauthorized));
    }
    next();
  };
}

const uuid = z.uuid();

function uuidParam(value: string | string[] | undefined, name: string): string {
  if (typeof value !== 'string' || !uuid.safeParse(value).success) {
    throw AppError.badRequest(platformTexts.mustBeUuid(name));
  }
  return value;
}

/** The panel's operations (ARCHITECTURE's admin API), guarded by ADMIN_TOKEN. */
export interface AdminRouteDeps {
  store: WorkspaceStore;
  bus: Bus;
  adminToken: string;
  authFailures: AuthFailureLimiter;
  bodyLimit: string;
  /** Tells every gateway replica that a workspace's key or status changed. */
  workspaceChanged(workspaceId: string): Promise<void>;
}

export function adminRoutes({
  store,
  bus,
  adminToken,
  authFailures,
  bodyLimit,
  workspaceChanged,
}: AdminRouteDeps): Router {
  const router = Router();
  router.use('/admin/v1', requireAdmin(adminToken, authFailures), jsonBody(bodyLimit));

  router.param('ws', async (_req, res, next, id: string) => {
    if (!uuid.safeParse(id).success)
      return next(AppError.badRequest(platformTexts.mustBeUuid('workspace id')));
    const workspace = await store.get(id);
    if (!workspace) return next(AppError.notFound(platformTexts.workspaceNotFound));
    res.locals.workspaceId = workspace.id;
    next();
  });

  router.post('/admin/v1/workspaces', async (req, res) => {
    const input = parse(CreateWorkspaceBody, req.body);
    const { workspace, apiKey } = await store.create(input);
    res.status(201).json({ workspace_id: workspace.id, ...workspace, api_key: apiKey });
  });

  router.get('/admin/v1/workspaces/:ws', async (_req, res) => {
    const workspace = await store.get(res.locals.workspaceId!);
    res.json({ workspace_id: workspace!.id, ...workspace });
  });

  router.patch('/admin/v1/workspaces/:ws', async (req, res) => {
    const { status } = parse(UpdateWorkspaceBody, req.body);
    const workspace = await store.setStatus(res.locals.workspaceId!, status);
    await workspaceChanged(workspace!.id);
    res.json({ workspace_id: workspace!.id, ...workspace });
  });

  router.post('/admin/v1/workspaces/:ws/api-key', async (_req, res) => {
    const apiKey = await store.rotateKey(res.locals.workspaceId!);
    await workspaceChanged(res.locals.workspaceId!);
    res.status(201).json({ api_key: apiKey });
  });

  router.post('/admin/v1/workspaces/:ws/integrations', async (req, res) => {
    const input = parse(CreateIntegrationBody, req.body);
    const integration = await bus.request('cmd.connector.create-integration', {
      ...input,
      workspace_id: res.locals.workspaceId!,
    });
    res.status(201).json(integration);
  });

  router.post('/admin/v1/workspaces/:ws/webhooks', async (req, res) => {
    const input = parse(CreateWebhookBody, req.body);
    const webhook = await bus.request('cmd.dispatcher.create-webhook', {
      ...input,
      workspace_id: res.locals.workspaceId!,
    });
    res.status(201).json(webhook);
  });

  router.patch('/admin/v1/workspaces/:ws/integrations/:id', async (req, res) => {
    const { status } = parse(UpdateIntegrationBody, req.body);
    res.json(
      await bus.request('cmd.connector.update-integration', {
        status,
        workspace_id: res.locals.workspaceId!,
        integration_id: uuidParam(req.params.id, 'integration id'),
      }),
    );
  });

  router.get('/admin/v1/workspaces/:ws/integrations/:id/templates', async (req, res) => {
    res.json(
      await bus.request('cmd.connector.list-templates', {
        workspace_id: res.locals.workspaceId!,
        integration_id: uuidParam(req.params.id, 'integration id'),
      }),
    );
  });

  router.post('/admin/v1/workspaces/:ws/integrations/:id/templates/refresh', async (req, res) => {
    res.json(
      await bus.request('cmd.connector.refresh-templates', {
        workspace_id: res.locals.workspaceId!,
        integration_id: uuidParam(req.params.id, 'integration id'),
      }),
    );
  });

  router.post('/admin/v1/workspaces/:ws/members', async (req, res) => {
    const input = parse(CreateMemberBody, req.body);
    res
      .status(201)
      .json(
        await bus.request('cmd.messaging.create-member', { ...input, workspace_id: res.locals.workspaceId! }),
      );
  });

  router.post('/admin/v1/workspaces/:ws/agents', async (req, res) => {
    const input = parse(CreateAgentBody, req.body);
    res
      .status(201)
      .json(
        await bus.request('cmd.messaging.create-agent', { ...input, workspace_id: res.locals.workspaceId! }),
      );
  });

  router.post('/admin/v1/workspaces/:ws/conversations/:id/assign', async (req, res) => {
    const input = parse(AssignBody, req.body);
    res.json(
      await bus.request('cmd.messaging.assign', {
        ...input,
        workspace_id: res.locals.workspaceId!,
        conversation_id: uuidParam(req.params.id, 'conversation id'),
      }),
    );
  });

  router.post('/admin/v1/workspaces/:ws/conversations/:id/resolve', async (req, res) => {
    res.json(
      await bus.request('cmd.messaging.resolve', {
        workspace_id: res.locals.workspaceId!,
        conversation_id: uuidParam(req.params.id, 'conversation id'),
      }),
    );
  });

  router.get('/admin/v1/workspaces/:ws/conversations/:id', async (req, res) => {
    res.json(
      await bus.request('cmd.messaging.get-conversation', {
        workspace_id: res.locals.workspaceId!,
        conversation_id: uuidParam(req.params.id, 'conversation id'),
        ...parse(ConversationPage, req.query),
      }),
    );
  });

  // The contact is messaging's; its stage in each pipeline is the pipeline service's.
  router.get('/admin/v1/workspaces/:ws/contacts/:id', async (req, res) => {
    const ids = { workspace_id: res.locals.workspaceId!, contact_id: uuidParam(req.params.id, 'contact id') };
    const contact = await bus.request('cmd.messaging.get-contact', ids);
    const { stages } = await bus.request('cmd.pipeline.contact-stages', ids);
    res.json({ ...contact, stages });
  });

  router.post('/admin/v1/workspaces/:ws/pipelines', async (req, res) => {
    const input = parse(CreatePipelineBody, req.body);
    res
      .status(201)
      .json(await bus.request('cmd.pipeline.create', { ...input, workspace_id: res.locals.workspaceId! }));
  });

  router.get('/admin/v1/workspaces/:ws/pipelines', async (_req, res) => {
    res.json(await bus.request('cmd.pipeline.list', { workspace_id: res.locals.workspaceId! }));
  });

  const pipelineIds = (
    req: { params: Record<string, string | string[] | undefined> },
    res: { locals: { workspaceId?: string } },
  ) => ({
    workspace_id: res.locals.workspaceId!,
    pipeline_id: uuidParam(req.params.id, 'pipeline id'),
  });

  router.get('/admin/v1/workspaces/:ws/pipelines/:id', async (req, res) => {
    res.json(await bus.request('cmd.pipeline.get', pipelineIds(req, res)));
  });

  router.patch('/admin/v1/workspaces/:ws/pipelines/:id', async (req, res) => {
    const input = parse(RenamePipelineBody, req.body);
    res.json(await bus.request('cmd.pipeline.rename', { ...input, ...pipelineIds(req, res) }));
  });

  router.post('/admin/v1/workspaces/:ws/pipelines/:id/stages', async (req, res) => {
    const input = parse(AddStageBody, req.body);
    res.status(201).json(await bus.request('cmd.pipeline.add-stage', { ...input, ...pipelineIds(req, res) }));
  });

  router.put('/admin/v1/workspaces/:ws/pipelines/:id/stage-order', async (req, res) => {
    const input = parse(ReorderStagesBody, req.body);
    res.json(await bus.request('cmd.pipeline.reorder-stages', { ...input, ...pipelineIds(req, res) }));
  });

  router.patch('/admin/v1/workspaces/:ws/pipelines/:id/stages/:key', async (req, res) => {
    const input = parse(RenameStageBody, req.body);
    res.json(
      await bus.request('cmd.pipeline.rename-stage', {
        ...input,
        ...pipelineIds(req, res),
        key: String(req.params.key),
      }),
    );
  });

  router.delete('/admin/v1/workspaces/:ws/pipelines/:id/stages/:key', async (req, res) => {
    const moveTo = typeof req.query.move_to === 'string' ? req.query.move_to : null;
    res.json(
      await bus.request('cmd.pipeline.remove-stage', {
        ...pipelineIds(req, res),
        key: String(req.params.key),
        move_to: moveTo,
      }),
    );
  });

  router.get('/admin/v1/workspaces/:ws/pipelines/:id/contacts/:contact/history', async (req, res) => {
    res.json(
      await bus.request('cmd.pipeline.lead-history', {
        ...pipelineIds(req, res),
        contact_id: uuidParam(req.params.contact, 'contact id'),
      }),
    );
  });

  const webhookIds = (
    req: { params: Record<string, string | string[] | undefined> },
    res: { locals: { workspaceId?: string } },
  ) => ({
    workspace_id: res.locals.workspaceId!,
    webhook_id: uuidParam(req.params.id, 'webhook id'),
  });

  router.get('/admin/v1/workspaces/:ws/webhooks', async (_req, res) => {
    res.json(await bus.request('cmd.dispatcher.list-webhooks', { workspace_id: res.locals.workspaceId! }));
  });

  router.get('/admin/v1/workspaces/:ws/webhooks/:id', async (req, res) => {
    res.json(await bus.request('cmd.dispatcher.get-webhook', webhookIds(req, res)));
  });

  router.patch('/admin/v1/workspaces/:ws/webhooks/:id', async (req, res) => {
    const input = parse(UpdateWebhookBody, req.body);
    res.json(await bus.request('cmd.dispatcher.update-webhook', { ...input, ...webhookIds(req, res) }));
  });

  router.delete('/admin/v1/workspaces/:ws/webhooks/:id', async (req, res) => {
    res.json(await bus.request('cmd.dispatcher.delete-webhook', webhookIds(req, res)));
  });

  router.post('/admin/v1/workspaces/:ws/webhooks/:id/secret', async (req, res) => {
    const input = parse(RotateSecretBody, req.body);
    res
      .status(201)
      .json(await bus.request('cmd.dispatcher.rotate-secret', { ...input, ...webhookIds(req, res) }));
  });

  router.get('/admin/v1/workspaces/:ws/webhooks/:id/deliveries', async (req, res) => {
    const query = parse(DeliveryQuery, req.query);
    res.json(await bus.request('cmd.dispatcher.list-deliveries', { ...query, ...webhookIds(req, res) }));
  });

  router.get('/admin/v1/workspaces/:ws/webhooks/:id/deliveries/:delivery', async (req, res) => {
    res.json(
      await bus.request('cmd.dispatcher.get-delivery', {
        ...webhookIds(req, res),
        delivery_id: uuidParam(req.params.delivery, 'delivery id'),
      }),
    );
  });

  router.post('/admin/v1/workspaces/:ws/webhooks/:id/deliveries/:delivery/resend', async (req, res) => {
    res.json(
      await bus.request('cmd.dispatcher.resend-delivery', {
        ...webhookIds(req, res),
        delivery_id: uuidParam(req.params.delivery, 'delivery id'),
      }),
    );
  });

  router.post('/admin/v1/workspaces/:ws/webhooks/:id/replay', async (req, res) => {
    const input = parse(ReplayBody, req.body);
    res.json(await bus.request('cmd.dispatcher.replay-failed', { ...input, ...webhookIds(req, res) }));
  });

  const allowed: Array<[string, string[]]> = [
    ['/admin/v1/workspaces', ['POST']],
    ['/admin/v1/workspaces/:ws', ['GET', 'PATCH']],
    ['/admin/v1/workspaces/:ws/api-key', ['POST']],
    ['/admin/v1/workspaces/:ws/integrations', ['POST']],
    ['/admin/v1/workspaces/:ws/webhooks', ['GET', 'POST']],
    ['/admin/v1/workspaces/:ws/webhooks/:id', ['GET', 'PATCH', 'DELETE']],
    ['/admin/v1/workspaces/:ws/webhooks/:id/secret', ['POST']],
    ['/admin/v1/workspaces/:ws/webhooks/:id/deliveries/:delivery', ['GET']],
    ['/admin/v1/workspaces/:ws/webhooks/:id/deliveries/:delivery/resend', ['POST']],
    ['/admin/v1/workspaces/:ws/webhooks/:id/replay', ['POST']],
    ['/admin/v1/workspaces/:ws/webhooks/:id/deliveries', ['GET']],
    ['/admin/v1/workspaces/:ws/integrations/:id', ['PATCH']],
    ['/admin/v1/workspaces/:ws/integrations/:id/templates', ['GET']],
    ['/admin/v1/workspaces/:ws/integrations/:id/templates/refresh', ['POST']],
    ['/admin/v1/workspaces/:ws/members', ['POST']],
    ['/admin/v1/workspaces/:ws/agents', ['POST']],
    ['/admin/v1/workspaces/:ws/conversations/:id/assign', ['POST']],
    ['/admin/v1/workspaces/:ws/conversations/:id/resolve', ['POST']],
    ['/admin/v1/workspaces/:ws/conversations/:id', ['GET']],
    ['/admin/v1/workspaces/:ws/contacts/:id', ['GET']],
    ['/admin/v1/workspaces/:ws/pipelines', ['GET', 'POST']],
    ['/admin/v1/workspaces/:ws/pipelines/:id', ['GET', 'PATCH']],
    ['/admin/v1/workspaces/:ws/pipelines/:id/stages', ['POST']],
    ['/admin/v1/workspaces/:ws/pipelines/:id/stage-order', ['PUT']],
    ['/admin/v1/workspaces/:ws/pipelines/:id/stages/:key', ['PATCH', 'DELETE']],
    ['/admin/v1/workspaces/:ws/pipelines/:id/contacts/:contact/history', ['GET']],
  ];
  for (const [path, methods] of allowed) router.all(path, methodNotAllowed(methods));
  return router;
}
