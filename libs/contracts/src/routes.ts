import { z } from 'zod';
import {
  AddStageBody,
  AssignBody,
  ConversationListQuery,
  ConversationPage,
  CreateAgentBody,
  CreateIntegrationBody,
  CreateMemberBody,
  CreatePipelineBody,
  CreateWebhookBody,
  CreateWorkspaceBody,
  DeliveryQuery,
  FailedMessagesQuery,
  LeadHistoryQuery,
  MoveContactBody,
  PipelineContactsQuery,
  RenamePipelineBody,
  RenameStageBody,
  ReorderStagesBody,
  ReplayBody,
  ReplyBody,
  RotateSecretBody,
  UpdateIntegrationBody,
  UpdateWebhookBody,
  UpdateWorkspaceBody,
  workspaceStatuses,
} from './admin-api.js';
import { templateBodyBytes } from './body-limits.js';
import { type CommandRequest, type CommandSubject, Contact, ContactStage } from './commands.js';
import { documentedAs } from './documented-as.js';
import { errorTexts, platformTexts } from './error-texts.js';
import {
  externalSendRule,
  type MoveLeadBody,
  moveLeadRule,
  type SendMessageBody,
  type SendTemplateBody,
  sendMessageRule,
  sendTemplateRule,
} from './public-api.js';
import type { BodyRule } from './validate.js';
import { sendsInFlightPerWorkspace } from './workspace-limits.js';

/**
 * Every HTTP route of the gateway, declared once: the gateway mounts this table (and answers 405 from
 * it), the OpenAPI document is generated from it, and the SDK's types from that document.
 */

export type HttpMethod = 'get' | 'post' | 'put' | 'patch' | 'delete';

/**
 * What a caller must present; the two kinds of key differ only in the texts they answer. `none` is for
 * what describes the API itself (its OpenAPI document), open to anyone who can reach the gateway.
 */
export type Access = 'workspace-key' | 'admin-token' | 'none';

/** How a workspace key's absence and a wrong key are told (the spec gives the external API its own words). */
export interface KeyTexts {
  missing: string;
  invalid: string;
}
export const apiV1KeyTexts: KeyTexts = {
  missing: errorTexts.apiKeyInvalid,
  invalid: errorTexts.apiKeyInvalid,
};
export const externalKeyTexts: KeyTexts = {
  missing: errorTexts.authorizationMissing,
  invalid: errorTexts.apiKeyNotFound,
};

/** What the gateway knows of the caller and adds to a command: never taken from the request itself. */
export interface CallerFacts {
  /** The key's workspace, on workspace-key routes. */
  workspace?: { id: string; default_country_code: string };
  workspace_id: string;
  /** The key's hint, recorded as who moved a lead. */
  key_hint: string;
}

/** Answers the gateway gives itself: the workspace is the gateway's own data. */
export const localOperations = [
  'list-workspaces',
  'create-workspace',
  'get-workspace',
  'update-workspace',
  'rotate-api-key',
  'get-contact',
  'list-pipeline-contacts',
  'openapi-document',
] as const;
export type LocalOperation = (typeof localOperations)[number];

interface RouteBase {
  /** Unique, stable: the OpenAPI operationId and the SDK's name for the call. */
  operationId: string;
  summary: string;
  tag:
    | 'Public API'
    | 'Workspaces'
    | 'Integrations'
    | 'Team'
    | 'Conversations'
    | 'Pipelines'
    | 'Webhooks'
    | 'Documentation';
  method: HttpMethod;
  /** An OpenAPI path template: `{name}` for each path parameter. */
  path: string;
  access: Access;
  /** Only for workspace-key routes; the v1 texts when absent. */
  keyTexts?: KeyTexts;
  /** One schema per path parameter, each answering its own text; checked in this order. */
  params?: z.ZodObject;
  query?: z.ZodObject;
  /** The spec's endpoints check required fields first (a BodyRule); the admin API parses a schema. */
  body?: BodyRule<z.ZodType> | z.ZodType;
  /** The success status; 200 when absent. */
  status?: 200 | 201;
  /** Counted against the workspace's per-minute budget (the spec's 429). */
  rateLimited?: boolean;
  /**
   * How many of one workspace's requests a gateway replica answers at once; beyond, 503 with nothing
   * done. For a route with no rate limit: one tenant's flood otherwise queued every tenant's requests
   * behind it in the services and pools they share.
   */
  inFlightPerWorkspace?: number;
  /** The largest body it reads, in bytes: `publicBodyBytes` or `adminBodyBytes` by access when absent. */
  bodyBytes?: number;
  /** Takes an `Idempotency-Key` header. */
  idempotent?: boolean;
}

/** A route answered by one bus command. `request` builds the command from the checked input. */
export interface CommandRoute<S extends CommandSubject = CommandSubject> extends RouteBase {
  command: S;
  /** When absent: path parameters, query and body merged, plus the caller's workspace_id. */
  request?: (input: RouteInput) => CommandRequest<S>;
}

/** A route the gateway answers itself; `reply` is its answer's schema. */
export interface LocalRoute extends RouteBase {
  local: LocalOperation;
  reply: z.ZodType;
}

export type RouteDefinition = CommandRoute | LocalRoute;

export interface RouteInput {
  params: Record<string, unknown>;
  query: Record<string, unknown>;
  body: Record<string, unknown>;
  caller: CallerFacts;
}

const commandRoute = <S extends CommandSubject>(route: CommandRoute<S>): CommandRoute =>
  route as CommandRoute;

const uuidParam = (label: string) => z.uuid({ error: platformTexts.mustBeUuid(label) });
const ids = <K extends string>(...names: K[]) =>
  z.object(
    Object.fromEntries(names.map((name) => [name, uuidParam(name.replace('_', ' '))])) as Record<
      K,
      z.ZodUUID
    >,
  );
const stageKey = z.string();
/** The workspace an admin route names; it must also exist. */
export const AdminWorkspaceParams = ids('workspace_id');

export const adminPrefix = '/admin/v1';
const ws = `${adminPrefix}/workspaces/{workspace_id}`;

export const Workspace = z.object({
  workspace_id: z.uuid(),
  id: z.uuid(),
  name: z.string(),
  status: z.enum(workspaceStatuses),
  default_country_code: z.string(),
  created_at: z.iso.datetime(),
});
/** The key is shown once, here; only its hash is kept. */
export const CreatedWorkspace = Workspace.extend({ api_key: z.string() });
export const WorkspaceList = z.object({ workspaces: z.array(Workspace) });
export const RotatedApiKey = z.object({ api_key: z.string() });
export const ContactWithStages = Contact.extend({ stages: z.array(ContactStage) });
/** A card of a funnel's board: the contact and where it stands. */
export const PipelineContact = Contact.pick({ id: true, phone: true, name: true }).extend({
  stage: z.string(),
  moved_at: z.iso.datetime(),
});
export const PipelineContacts = z.object({ contacts: z.array(PipelineContact) });

export const routes: readonly RouteDefinition[] = [
  commandRoute({
    operationId: 'sendMessage',
    summary: 'Send a text message',
    tag: 'Public API',
    method: 'post',
    path: '/api/v1/send-message',
    access: 'workspace-key',
    body: sendMessageRule,
    rateLimited: true,
    idempotent: true,
    command: 'cmd.messaging.send-message',
    request: ({ body, caller }) => ({ ...(body as SendMessageBody), workspace: caller.workspace! }),
  }),
  commandRoute({
    operationId: 'sendTemplate',
    summary: 'Send an approved template (HSM)',
    tag: 'Public API',
    method: 'post',
    path: '/api/v1/send-template',
    access: 'workspace-key',
    body: sendTemplateRule,
    bodyBytes: templateBodyBytes,
    rateLimited: true,
    idempotent: true,
    command: 'cmd.messaging.send-template',
    request: ({ body, caller }) => ({ ...(body as SendTemplateBody), workspace: caller.workspace! }),
  }),
  commandRoute({
    operationId: 'externalSend',
    summary: 'Send a message into an existing conversation',
    tag: 'Public API',
    method: 'post',
    path: '/api/external/messages/send',
    access: 'workspace-key',
    keyTexts: externalKeyTexts,
    body: externalSendRule,
    idempotent: true,
    inFlightPerWorkspace: sendsInFlightPerWorkspace,
    command: 'cmd.messaging.external-send',
  }),
  commandRoute({
    operationId: 'moveLead',
    summary: "Move a contact to a pipeline's stage",
    tag: 'Public API',
    method: 'patch',
    path: '/api/v1/leads/{id}',
    access: 'workspace-key',
    params: z.object({ id: uuidParam('id') }),
    body: moveLeadRule,
    rateLimited: true,
    command: 'cmd.pipeline.move-lead',
    request: ({ params, body, caller }) => ({
      ...(body as MoveLeadBody),
      workspace_id: caller.workspace_id,
      contact_id: params.id as string,
      moved_by: caller.key_hint,
    }),
  }),

  {
    operationId: 'listWorkspaces',
    summary: 'Every workspace, the newest first',
    tag: 'Workspaces',
    method: 'get',
    path: `${adminPrefix}/workspaces`,
    access: 'admin-token',
    local: 'list-workspaces',
    reply: WorkspaceList,
  },
  {
    operationId: 'createWorkspace',
    summary: 'Create a workspace and its first API key',
    tag: 'Workspaces',
    method: 'post',
    path: `${adminPrefix}/workspaces`,
    access: 'admin-token',
    body: CreateWorkspaceBody,
    status: 201,
    local: 'create-workspace',
    reply: CreatedWorkspace,
  },
  {
    operationId: 'getWorkspace',
    summary: 'Read a workspace',
    tag: 'Workspaces',
    method: 'get',
    path: ws,
    access: 'admin-token',
    params: ids('workspace_id'),
    local: 'get-workspace',
    reply: Workspace,
  },
  {
    operationId: 'updateWorkspace',
    summary: "Change a workspace's status",
    tag: 'Workspaces',
    method: 'patch',
    path: ws,
    access: 'admin-token',
    params: ids('workspace_id'),
    body: UpdateWorkspaceBody,
    local: 'update-workspace',
    reply: Workspace,
  },
  {
    operationId: 'rotateApiKey',
    summary: "Replace the workspace's API key (the old one stops working at once)",
    tag: 'Workspaces',
    method: 'post',
    path: `${ws}/api-key`,
    access: 'admin-token',
    params: ids('workspace_id'),
    status: 201,
    local: 'rotate-api-key',
    reply: RotatedApiKey,
  },

  commandRoute({
    operationId: 'listIntegrations',
    summary: "The workspace's integrations and their status",
    tag: 'Integrations',
    method: 'get',
    path: `${ws}/integrations`,
    access: 'admin-token',
    params: ids('workspace_id'),
    command: 'cmd.connector.list-integrations',
  }),
  commandRoute({
    operationId: 'createIntegration',
    summary: 'Connect a channel',
    tag: 'Integrations',
    method: 'post',
    path: `${ws}/integrations`,
    access: 'admin-token',
    params: ids('workspace_id'),
    body: CreateIntegrationBody,
    status: 201,
    command: 'cmd.connector.create-integration',
  }),
  commandRoute({
    operationId: 'getIntegration',
    summary: 'Read an integration: its status, and why the provider disconnected it',
    tag: 'Integrations',
    method: 'get',
    path: `${ws}/integrations/{integration_id}`,
    access: 'admin-token',
    params: ids('workspace_id', 'integration_id'),
    command: 'cmd.connector.get-integration',
  }),
  commandRoute({
    operationId: 'updateIntegration',
    summary: 'Connect or disconnect an integration',
    tag: 'Integrations',
    method: 'patch',
    path: `${ws}/integrations/{integration_id}`,
    access: 'admin-token',
    params: ids('workspace_id', 'integration_id'),
    body: UpdateIntegrationBody,
    command: 'cmd.connector.update-integration',
  }),
  commandRoute({
    operationId: 'listTemplates',
    summary: "The integration's approved templates, as last fetched",
    tag: 'Integrations',
    method: 'get',
    path: `${ws}/integrations/{integration_id}/templates`,
    access: 'admin-token',
    params: ids('workspace_id', 'integration_id'),
    command: 'cmd.connector.list-templates',
  }),
  commandRoute({
    operationId: 'refreshTemplates',
    summary: "Fetch the integration's templates from the provider again",
    tag: 'Integrations',
    method: 'post',
    path: `${ws}/integrations/{integration_id}/templates/refresh`,
    access: 'admin-token',
    params: ids('workspace_id', 'integration_id'),
    command: 'cmd.connector.refresh-templates',
  }),

  commandRoute({
    operationId: 'listMembers',
    summary: "The workspace's human team members",
    tag: 'Team',
    method: 'get',
    path: `${ws}/members`,
    access: 'admin-token',
    params: ids('workspace_id'),
    command: 'cmd.messaging.list-members',
  }),
  commandRoute({
    operationId: 'createMember',
    summary: 'Add a human team member',
    tag: 'Team',
    method: 'post',
    path: `${ws}/members`,
    access: 'admin-token',
    params: ids('workspace_id'),
    body: CreateMemberBody,
    status: 201,
    command: 'cmd.messaging.create-member',
  }),
  commandRoute({
    operationId: 'listAgents',
    summary: "The workspace's AI agents",
    tag: 'Team',
    method: 'get',
    path: `${ws}/agents`,
    access: 'admin-token',
    params: ids('workspace_id'),
    command: 'cmd.messaging.list-agents',
  }),
  commandRoute({
    operationId: 'createAgent',
    summary: 'Add an AI agent',
    tag: 'Team',
    method: 'post',
    path: `${ws}/agents`,
    access: 'admin-token',
    params: ids('workspace_id'),
    body: CreateAgentBody,
    status: 201,
    command: 'cmd.messaging.create-agent',
  }),

  commandRoute({
    operationId: 'listConversations',
    summary: 'Conversations with the newest activity first, a page at a time',
    tag: 'Conversations',
    method: 'get',
    path: `${ws}/conversations`,
    access: 'admin-token',
    params: ids('workspace_id'),
    query: ConversationListQuery,
    command: 'cmd.messaging.list-conversations',
  }),
  commandRoute({
    operationId: 'getConversation',
    summary: 'A conversation with a page of its messages, newest first',
    tag: 'Conversations',
    method: 'get',
    path: `${ws}/conversations/{conversation_id}`,
    access: 'admin-token',
    params: ids('workspace_id', 'conversation_id'),
    query: ConversationPage,
    command: 'cmd.messaging.get-conversation',
  }),
  commandRoute({
    operationId: 'assignConversation',
    summary: 'Assign a conversation to a member or an agent, or unassign it',
    tag: 'Conversations',
    method: 'post',
    path: `${ws}/conversations/{conversation_id}/assign`,
    access: 'admin-token',
    params: ids('workspace_id', 'conversation_id'),
    body: AssignBody,
    command: 'cmd.messaging.assign',
  }),
  commandRoute({
    operationId: 'replyToConversation',
    summary:
      "Reply in a conversation as a person of the team (an external send on the conversation's channel)",
    tag: 'Conversations',
    method: 'post',
    path: `${ws}/conversations/{conversation_id}/messages`,
    access: 'admin-token',
    params: ids('workspace_id', 'conversation_id'),
    body: ReplyBody,
    status: 201,
    command: 'cmd.messaging.external-send',
    request: ({ params, body, caller }) => ({
      workspace_id: caller.workspace_id,
      conversation_id: params.conversation_id as string,
      text: body.text as string,
      sender_type: 'human',
      sender_name: (body.sender_name as string | null | undefined) ?? null,
    }),
  }),
  commandRoute({
    operationId: 'resolveConversation',
    summary: 'Resolve a conversation',
    tag: 'Conversations',
    method: 'post',
    path: `${ws}/conversations/{conversation_id}/resolve`,
    access: 'admin-token',
    params: ids('workspace_id', 'conversation_id'),
    command: 'cmd.messaging.resolve',
  }),
  commandRoute({
    operationId: 'listFailedMessages',
    summary:
      'Outbound messages the provider accepted and later reported failed (e.g. 131047, 131053), newest first',
    tag: 'Conversations',
    method: 'get',
    path: `${ws}/messages/failed`,
    access: 'admin-token',
    params: ids('workspace_id'),
    query: FailedMessagesQuery,
    command: 'cmd.messaging.list-failed-messages',
  }),
  {
    operationId: 'getContact',
    summary: 'A contact and its stage in each pipeline',
    tag: 'Conversations',
    method: 'get',
    path: `${ws}/contacts/{contact_id}`,
    access: 'admin-token',
    params: ids('workspace_id', 'contact_id'),
    local: 'get-contact',
    reply: ContactWithStages,
  },

  commandRoute({
    operationId: 'listPipelines',
    summary: "The workspace's pipelines",
    tag: 'Pipelines',
    method: 'get',
    path: `${ws}/pipelines`,
    access: 'admin-token',
    params: ids('workspace_id'),
    command: 'cmd.pipeline.list',
  }),
  commandRoute({
    operationId: 'createPipeline',
    summary: 'Create a pipeline with its stages',
    tag: 'Pipelines',
    method: 'post',
    path: `${ws}/pipelines`,
    access: 'admin-token',
    params: ids('workspace_id'),
    body: CreatePipelineBody,
    status: 201,
    command: 'cmd.pipeline.create',
  }),
  commandRoute({
    operationId: 'getPipeline',
    summary: 'A pipeline with the number of contacts in each stage',
    tag: 'Pipelines',
    method: 'get',
    path: `${ws}/pipelines/{pipeline_id}`,
    access: 'admin-token',
    params: ids('workspace_id', 'pipeline_id'),
    command: 'cmd.pipeline.get',
  }),
  commandRoute({
    operationId: 'renamePipeline',
    summary: 'Rename a pipeline',
    tag: 'Pipelines',
    method: 'patch',
    path: `${ws}/pipelines/{pipeline_id}`,
    access: 'admin-token',
    params: ids('workspace_id', 'pipeline_id'),
    body: RenamePipelineBody,
    command: 'cmd.pipeline.rename',
  }),
  commandRoute({
    operationId: 'addStage',
    summary: 'Add a stage to a pipeline',
    tag: 'Pipelines',
    method: 'post',
    path: `${ws}/pipelines/{pipeline_id}/stages`,
    access: 'admin-token',
    params: ids('workspace_id', 'pipeline_id'),
    body: AddStageBody,
    status: 201,
    command: 'cmd.pipeline.add-stage',
  }),
  commandRoute({
    operationId: 'reorderStages',
    summary: "Put a pipeline's stages in a new order",
    tag: 'Pipelines',
    method: 'put',
    path: `${ws}/pipelines/{pipeline_id}/stage-order`,
    access: 'admin-token',
    params: ids('workspace_id', 'pipeline_id'),
    body: ReorderStagesBody,
    command: 'cmd.pipeline.reorder-stages',
  }),
  commandRoute({
    operationId: 'renameStage',
    summary: 'Rename a stage',
    tag: 'Pipelines',
    method: 'patch',
    path: `${ws}/pipelines/{pipeline_id}/stages/{key}`,
    access: 'admin-token',
    params: ids('workspace_id', 'pipeline_id').extend({ key: stageKey }),
    body: RenameStageBody,
    command: 'cmd.pipeline.rename-stage',
  }),
  commandRoute({
    operationId: 'removeStage',
    summary: 'Remove a stage, moving its contacts to another one',
    tag: 'Pipelines',
    method: 'delete',
    path: `${ws}/pipelines/{pipeline_id}/stages/{key}`,
    access: 'admin-token',
    params: ids('workspace_id', 'pipeline_id').extend({ key: stageKey }),
    // A repeated or empty move_to is no stage: the pipeline service answers as for a stage not given.
    query: z.object({
      move_to: documentedAs(
        z.string().optional().catch(undefined),
        z
          .string()
          .optional()
          .describe("Where the stage's contacts go, when it holds any: another stage's key."),
      ),
    }),
    command: 'cmd.pipeline.remove-stage',
    request: ({ params, query }) => ({
      workspace_id: params.workspace_id as string,
      pipeline_id: params.pipeline_id as string,
      key: params.key as string,
      move_to: (query.move_to as string | undefined) ?? null,
    }),
  }),
  {
    operationId: 'listPipelineContacts',
    summary: "The contacts in a pipeline and each one's stage, the most recently moved first",
    tag: 'Pipelines',
    method: 'get',
    path: `${ws}/pipelines/{pipeline_id}/contacts`,
    access: 'admin-token',
    params: ids('workspace_id', 'pipeline_id'),
    query: PipelineContactsQuery,
    local: 'list-pipeline-contacts',
    reply: PipelineContacts,
  },
  commandRoute({
    operationId: 'moveContact',
    summary:
      "Move a contact to a pipeline's stage, as the public lead move does (recorded as moved by the panel)",
    tag: 'Pipelines',
    method: 'put',
    path: `${ws}/pipelines/{pipeline_id}/contacts/{contact_id}`,
    access: 'admin-token',
    params: ids('workspace_id', 'pipeline_id', 'contact_id'),
    body: MoveContactBody,
    command: 'cmd.pipeline.move-lead',
    request: ({ params, body, caller }) => ({
      workspace_id: caller.workspace_id,
      pipeline_id: params.pipeline_id as string,
      contact_id: params.contact_id as string,
      stage: body.stage as string,
      conversation_id: (body.conversation_id as string | null | undefined) ?? null,
      moved_by: platformTexts.movedByPanel,
    }),
  }),
  commandRoute({
    operationId: 'leadHistory',
    summary: "A contact's moves in a pipeline",
    tag: 'Pipelines',
    method: 'get',
    path: `${ws}/pipelines/{pipeline_id}/contacts/{contact_id}/history`,
    access: 'admin-token',
    params: ids('workspace_id', 'pipeline_id', 'contact_id'),
    query: LeadHistoryQuery,
    command: 'cmd.pipeline.lead-history',
  }),

  commandRoute({
    operationId: 'listWebhooks',
    summary: "The workspace's webhook endpoints",
    tag: 'Webhooks',
    method: 'get',
    path: `${ws}/webhooks`,
    access: 'admin-token',
    params: ids('workspace_id'),
    command: 'cmd.dispatcher.list-webhooks',
  }),
  commandRoute({
    operationId: 'createWebhook',
    summary: 'Register a webhook endpoint',
    tag: 'Webhooks',
    method: 'post',
    path: `${ws}/webhooks`,
    access: 'admin-token',
    params: ids('workspace_id'),
    body: CreateWebhookBody,
    status: 201,
    command: 'cmd.dispatcher.create-webhook',
  }),
  commandRoute({
    operationId: 'getWebhook',
    summary: 'Read a webhook endpoint',
    tag: 'Webhooks',
    method: 'get',
    path: `${ws}/webhooks/{webhook_id}`,
    access: 'admin-token',
    params: ids('workspace_id', 'webhook_id'),
    command: 'cmd.dispatcher.get-webhook',
  }),
  commandRoute({
    operationId: 'updateWebhook',
    summary: 'Change a webhook endpoint',
    tag: 'Webhooks',
    method: 'patch',
    path: `${ws}/webhooks/{webhook_id}`,
    access: 'admin-token',
    params: ids('workspace_id', 'webhook_id'),
    body: UpdateWebhookBody,
    command: 'cmd.dispatcher.update-webhook',
  }),
  commandRoute({
    operationId: 'deleteWebhook',
    summary: 'Delete a webhook endpoint',
    tag: 'Webhooks',
    method: 'delete',
    path: `${ws}/webhooks/{webhook_id}`,
    access: 'admin-token',
    params: ids('workspace_id', 'webhook_id'),
    command: 'cmd.dispatcher.delete-webhook',
  }),
  commandRoute({
    operationId: 'rotateWebhookSecret',
    summary: "Replace the endpoint's signing secret; the old one keeps signing for a grace period",
    tag: 'Webhooks',
    method: 'post',
    path: `${ws}/webhooks/{webhook_id}/secret`,
    access: 'admin-token',
    params: ids('workspace_id', 'webhook_id'),
    body: RotateSecretBody,
    status: 201,
    command: 'cmd.dispatcher.rotate-secret',
  }),
  commandRoute({
    operationId: 'listDeliveries',
    summary: "The endpoint's deliveries, newest first",
    tag: 'Webhooks',
    method: 'get',
    path: `${ws}/webhooks/{webhook_id}/deliveries`,
    access: 'admin-token',
    params: ids('workspace_id', 'webhook_id'),
    query: DeliveryQuery,
    command: 'cmd.dispatcher.list-deliveries',
  }),
  commandRoute({
    operationId: 'getDelivery',
    summary: 'A delivery with each of its attempts',
    tag: 'Webhooks',
    method: 'get',
    path: `${ws}/webhooks/{webhook_id}/deliveries/{delivery_id}`,
    access: 'admin-token',
    params: ids('workspace_id', 'webhook_id', 'delivery_id'),
    command: 'cmd.dispatcher.get-delivery',
  }),
  commandRoute({
    operationId: 'resendDelivery',
    summary: 'Deliver one event to the endpoint again',
    tag: 'Webhooks',
    method: 'post',
    path: `${ws}/webhooks/{webhook_id}/deliveries/{delivery_id}/resend`,
    access: 'admin-token',
    params: ids('workspace_id', 'webhook_id', 'delivery_id'),
    command: 'cmd.dispatcher.resend-delivery',
  }),
  commandRoute({
    operationId: 'replayFailed',
    summary: 'Deliver again every failed delivery since a time',
    tag: 'Webhooks',
    method: 'post',
    path: `${ws}/webhooks/{webhook_id}/replay`,
    access: 'admin-token',
    params: ids('workspace_id', 'webhook_id'),
    body: ReplayBody,
    command: 'cmd.dispatcher.replay-failed',
  }),

  commandRoute({
    operationId: 'sendTestEvent',
    summary: 'Deliver a `webhook.test` event to this endpoint now, whatever events it subscribed to',
    tag: 'Webhooks',
    method: 'post',
    path: `${ws}/webhooks/{webhook_id}/test`,
    access: 'admin-token',
    params: ids('workspace_id', 'webhook_id'),
    status: 201,
    command: 'cmd.dispatcher.send-test',
  }),

  {
    operationId: 'getOpenApiDocument',
    summary: 'This OpenAPI document',
    tag: 'Documentation',
    method: 'get',
    path: '/openapi.json',
    access: 'none',
    local: 'openapi-document',
    // An OpenAPI 3.1 document: its own schema is the OpenAPI specification's.
    reply: z.record(z.string(), z.unknown()),
  },
];

export const isCommandRoute = (route: RouteDefinition): route is CommandRoute => 'command' in route;
export const isBodyRule = (body: NonNullable<RouteDefinition['body']>): body is BodyRule<z.ZodType> =>
  'requiredText' in body;

/** Each path of the table with the methods it takes, for the 405's `Allow`. */
export function methodsByPath(table: readonly RouteDefinition[] = routes): Map<string, HttpMethod[]> {
  const paths = new Map<string, HttpMethod[]>();
  for (const route of table) paths.set(route.path, [...(paths.get(route.path) ?? []), route.method]);
  return paths;
}

/** `/a/{b}` → `/a/:b`, the form Express matches. */
export const expressPath = (path: string) => path.replace(/\{(\w+)\}/g, ':$1');
