import { z } from 'zod';
import {
  AddStageBody,
  ConversationListQuery,
  ConversationPage,
  CreateAgentBody,
  CreateIntegrationBody,
  CreateMemberBody,
  CreatePipelineBody,
  CreateWebhookBody,
  DeliveryQuery,
  FailedMessagesQuery,
  LeadHistoryQuery,
  PipelineContactsQuery,
  RenamePipelineBody,
  RenameStageBody,
  ReorderStagesBody,
  ReplayBody,
  RotateSecretBody,
  StageConfig,
  UpdateIntegrationBody,
  UpdateWebhookBody,
} from './admin-api.js';
import { integrationChannels, providers, providerUserIdMaxChars, sendMessageChannels } from './channels.js';
import { Failure } from './error-response.js';
import {
  ExternalSendBody,
  ExternalSendResponse,
  MoveLeadBody,
  MoveLeadResponse,
  SendMessageBody,
  SendMessageResponse,
  SendTemplateBody,
  SendTemplateResponse,
} from './public-api.js';
import { senderTypes } from './public-events.js';

/** What the gateway knows of the caller's workspace, passed along so owners need not ask for it. */
export const WorkspaceContext = z.object({ id: z.uuid(), default_country_code: z.string() });
export type WorkspaceContext = z.infer<typeof WorkspaceContext>;

/**
 * Why the provider, not an operator, disconnected an integration: `credentials_rejected`, it no longer
 * takes the credentials; `callback_taken`, another integration of the same provider account (in any
 * workspace) registered its callback URL since, and the provider keeps one per account (or, on Telegram,
 * tried to: a setWebhook it refuses leaves the bot with no webhook).
 */
export const integrationStatusReasons = ['credentials_rejected', 'callback_taken'] as const;

/**
 * How many days the connector keeps the record of a send the provider accepted (`sends`): past them,
 * `cmd.connector.send-outcome` answers `unrecorded` for it too, which messaging then takes for an unknown
 * outcome, never for a send that did not start.
 */
export const sendRecordRetentionDays = 30;

export const Integration = z.object({
  id: z.uuid(),
  channel: z.enum(integrationChannels),
  provider: z.enum(providers),
  name: z.string().nullable(),
  status: z.enum(['connected', 'disconnected']),
  /**
   * Set when the provider disconnected it: `credentials_rejected`, the provider no longer takes its
   * credentials (an expired or revoked token); `callback_taken`, another integration of the same account
   * registered its callback URL since, so the provider calls that one only (a Telegram bot's webhook, an
   * Evolution or Z-API instance's), or on Telegram had one refused, which leaves the bot with none. Null when connected, or disconnected by an operator.
   */
  status_reason: z.enum(integrationStatusReasons).nullable(),
  connected_at: z.iso.datetime().nullable(),
  created_at: z.iso.datetime(),
});
export type Integration = z.infer<typeof Integration>;
/**
 * Creating an integration answers it, and, when the callback URL breaks a rule of the channel's real
 * provider (http where it calls only https, too long) or must be set by hand in the provider's developer
 * console, `warnings` saying so.
 */
export const CreatedIntegration = Integration.extend({
  warnings: z
    .array(z.string())
    .min(1)
    .optional()
    .describe(
      'Present when the callback URL breaks a rule of the channel’s real provider (http where it calls only https, longer than it takes), so inbound messages would not arrive: set PUBLIC_CONNECTOR_URL; or when the provider takes its notification URL only in its developer console (market): the URL and topics to set there.',
    ),
});
export type CreatedIntegration = z.infer<typeof CreatedIntegration>;

export const Member = z.object({
  id: z.uuid(),
  name: z.string(),
  email: z.string(),
  created_at: z.iso.datetime(),
});
export const Agent = z.object({ id: z.uuid(), name: z.string(), created_at: z.iso.datetime() });

export const Contact = z.object({
  id: z.uuid(),
  /** Null for contacts of channels without phone numbers (the bot channel), keyed by the provider's user id. */
  phone: z.string().nullable(),
  name: z.string().nullable(),
  created_at: z.iso.datetime(),
});

export const MessageView = z.object({
  id: z.uuid(),
  direction: z.enum(['inbound', 'outbound', 'internal']),
  sender_type: z.string().nullable(),
  sender_name: z.string().nullable(),
  text: z.string(),
  type: z.string(),
  status: z.string(),
  delivery_status: z.string().nullable(),
  provider_message_id: z.string().nullable(),
  error: z.string().nullable(),
  /** The provider's code when it failed the message after accepting it (e.g. 131047, window closed). */
  delivery_error_code: z.number().int().nullable(),
  /** When the provider says it failed; null unless `delivery_status` is `failed`. */
  delivery_failed_at: z.iso.datetime().nullable(),
  created_at: z.iso.datetime(),
  sent_at: z.iso.datetime().nullable(),
});

/** An outbound message a provider accepted and later reported failed, as the admin API lists it. */
export const FailedMessage = z.object({
  id: z.uuid(),
  conversation_id: z.uuid(),
  integration: z.object({ id: z.uuid(), channel: z.string() }),
  text: z.string(),
  provider_message_id: z.string().nullable(),
  delivery_error_code: z.number().int().nullable(),
  error: z.string().nullable(),
  sent_at: z.iso.datetime().nullable(),
  failed_at: z.iso.datetime(),
});

export const ConversationView = z.object({
  id: z.uuid(),
  contact: z.object({ id: z.uuid(), phone: z.string().nullable(), name: z.string().nullable() }),
  integration: z.object({ id: z.uuid(), channel: z.string(), provider: z.enum(providers) }),
  status: z.enum(['open', 'assigned', 'resolved']),
  assigned_to_type: z.enum(['human', 'agent']).nullable(),
  assigned_to_id: z.uuid().nullable(),
  last_inbound_at: z.iso.datetime().nullable(),
  created_at: z.iso.datetime(),
  updated_at: z.iso.datetime(),
});

/** A conversation as the inbox lists it: the view, and its newest message cut to a preview. */
export const ConversationSummary = ConversationView.extend({
  last_message: z
    .object({
      text: z.string(),
      direction: MessageView.shape.direction,
      created_at: z.iso.datetime(),
    })
    .nullable(),
});

export const Pipeline = z.object({
  id: z.uuid(),
  name: z.string(),
  stages_config: z.array(StageConfig.extend({ contacts: z.number().int() })),
  created_at: z.iso.datetime(),
  updated_at: z.iso.datetime(),
});

export const LeadMove = z.object({
  id: z.uuid(),
  from_stage: z.string().nullable(),
  to_stage: z.string(),
  moved_at: z.iso.datetime(),
  moved_by: z.string(),
  conversation_id: z.uuid().nullable(),
});

export const ContactStage = z.object({
  pipeline_id: z.uuid(),
  pipeline_name: z.string(),
  stage: z.string(),
  stage_name: z.string(),
  moved_at: z.iso.datetime(),
});

export const Webhook = z.object({
  id: z.uuid(),
  url: z.string(),
  events: z.array(z.string()),
  enabled: z.boolean(),
  ordered: z.boolean(),
  max_per_second: z.number().int().nullable(),
  has_secret: z.boolean(),
  /** Until when deliveries are also signed with the secret replaced by the last rotation; null when not. */
  previous_secret_expires_at: z.iso.datetime().nullable(),
  disabled_reason: z.string().nullable(),
  failing_since: z.iso.datetime().nullable(),
  created_at: z.iso.datetime(),
  updated_at: z.iso.datetime(),
});

export const DeliveryAttempt = z.object({
  attempt: z.number().int(),
  at: z.iso.datetime(),
  status_code: z.number().int().nullable(),
  error: z.string().nullable(),
  duration_ms: z.number().int(),
  response_body: z.string().nullable(),
});

export const Delivery = z.object({
  id: z.uuid(),
  event_id: z.uuid(),
  event_type: z.string(),
  status: z.enum(['pending', 'delivered', 'failed']),
  attempt_count: z.number().int(),
  next_attempt_at: z.iso.datetime().nullable(),
  last_error: z.string().nullable(),
  created_at: z.iso.datetime(),
  delivered_at: z.iso.datetime().nullable(),
});

const webhookRef = z.object({ workspace_id: z.uuid(), webhook_id: z.uuid() });

/** Where a contact stands in a pipeline: a card of its board. */
export const LeadPosition = z.object({ contact_id: z.uuid(), stage: z.string(), moved_at: z.iso.datetime() });

/** A template send as the connector takes it: validated by the gateway, language already defaulted. */
export const TemplateSend = z.object({
  name: z.string(),
  language: z.string(),
  variables: z.array(z.union([z.string(), z.number()])),
  headerMedia: z
    .object({
      type: z.enum(['image', 'video', 'document']),
      link: z.string(),
      filename: z.string().nullish(),
    })
    .nullable(),
  buttons: z
    .array(
      z.object({
        index: z.number().int(),
        type: z.enum(['url', 'quick_reply']),
        text: z.string().nullish(),
        payload: z.string().nullish(),
      }),
    )
    .nullable(),
});
export type TemplateSend = z.infer<typeof TemplateSend>;

export const CatalogueTemplate = z.object({
  name: z.string(),
  language: z.string(),
  status: z.string(),
  body: z.string(),
  header_format: z.string().nullable(),
  buttons: z.array(z.record(z.string(), z.unknown())),
});

/**
 * Every command on the bus: subject `cmd.<service>.<verb>`, the payload the handler accepts and the data
 * of a successful reply. Callers and handlers are typed from this one table.
 */
export const commandCatalogue = {
  'cmd.messaging.send-message': {
    /**
     * `idempotency_key`: the caller's Idempotency-Key scoped by the gateway ("send-message:<key>"), so
     * the owner of the side effect finds a retry's first message instead of creating a second.
     */
    request: SendMessageBody.extend({
      workspace: WorkspaceContext,
      idempotency_key: z.string().max(300).optional(),
    }),
    reply: SendMessageResponse,
  },
  'cmd.messaging.send-template': {
    request: SendTemplateBody.extend({
      workspace: WorkspaceContext,
      idempotency_key: z.string().max(300).optional(),
    }),
    reply: SendTemplateResponse,
  },
  'cmd.messaging.external-send': {
    // The public body names an agent or the system; a reply written in the panel is a person's.
    request: ExternalSendBody.extend({
      workspace_id: z.uuid(),
      sender_type: z.enum(senderTypes).nullish(),
      idempotency_key: z.string().max(300).optional(),
    }),
    reply: ExternalSendResponse,
  },
  'cmd.pipeline.move-lead': {
    request: MoveLeadBody.extend({ workspace_id: z.uuid(), contact_id: z.uuid(), moved_by: z.string() }),
    reply: MoveLeadResponse,
  },
  'cmd.messaging.create-member': {
    request: CreateMemberBody.extend({ workspace_id: z.uuid() }),
    reply: Member,
  },
  'cmd.messaging.create-agent': {
    request: CreateAgentBody.extend({ workspace_id: z.uuid() }),
    reply: Agent,
  },
  'cmd.messaging.list-members': {
    request: z.object({ workspace_id: z.uuid() }),
    reply: z.object({ members: z.array(Member) }),
  },
  'cmd.messaging.list-agents': {
    request: z.object({ workspace_id: z.uuid() }),
    reply: z.object({ agents: z.array(Agent) }),
  },
  'cmd.messaging.list-conversations': {
    request: ConversationListQuery.extend({ workspace_id: z.uuid() }),
    reply: z.object({
      conversations: z.array(ConversationSummary),
      /** Pass as `before` for the next page; null when this page holds the last one. */
      older_before: z.uuid().nullable(),
    }),
  },
  'cmd.messaging.list-contacts': {
    request: z.object({ workspace_id: z.uuid(), contact_ids: z.array(z.uuid()).max(500) }),
    reply: z.object({ contacts: z.array(Contact) }),
  },
  'cmd.messaging.assign': {
    request: z.object({
      workspace_id: z.uuid(),
      conversation_id: z.uuid(),
      type: z.enum(['human', 'agent']).nullable(),
      id: z.uuid().nullable(),
    }),
    reply: ConversationView,
  },
  'cmd.messaging.resolve': {
    request: z.object({ workspace_id: z.uuid(), conversation_id: z.uuid() }),
    reply: ConversationView,
  },
  'cmd.messaging.list-failed-messages': {
    request: FailedMessagesQuery.extend({ workspace_id: z.uuid() }),
    reply: z.object({ messages: z.array(FailedMessage) }),
  },
  'cmd.messaging.get-conversation': {
    request: z.object({
      workspace_id: z.uuid(),
      conversation_id: z.uuid(),
      // The newest page, or the page of messages older than `before` (a message id of this conversation).
      ...ConversationPage.shape,
    }),
    reply: ConversationView.extend({
      messages: z.array(MessageView),
      /** Pass as `before` for the next older page; null when the oldest message is in this one. */
      older_before: z.uuid().nullable(),
    }),
  },
  'cmd.messaging.get-contact': {
    request: z.object({ workspace_id: z.uuid(), contact_id: z.uuid() }),
    reply: Contact,
  },
  'cmd.pipeline.create': {
    request: CreatePipelineBody.extend({ workspace_id: z.uuid() }),
    reply: Pipeline,
  },
  'cmd.pipeline.list': {
    request: z.object({ workspace_id: z.uuid() }),
    reply: z.object({ pipelines: z.array(Pipeline) }),
  },
  'cmd.pipeline.get': {
    request: z.object({ workspace_id: z.uuid(), pipeline_id: z.uuid() }),
    reply: Pipeline,
  },
  'cmd.pipeline.rename': {
    request: RenamePipelineBody.extend({ workspace_id: z.uuid(), pipeline_id: z.uuid() }),
    reply: Pipeline,
  },
  'cmd.pipeline.add-stage': {
    request: AddStageBody.extend({ workspace_id: z.uuid(), pipeline_id: z.uuid() }),
    reply: Pipeline,
  },
  'cmd.pipeline.rename-stage': {
    request: RenameStageBody.extend({ workspace_id: z.uuid(), pipeline_id: z.uuid(), key: z.string() }),
    reply: Pipeline,
  },
  'cmd.pipeline.reorder-stages': {
    request: ReorderStagesBody.extend({ workspace_id: z.uuid(), pipeline_id: z.uuid() }),
    reply: Pipeline,
  },
  'cmd.pipeline.remove-stage': {
    request: z.object({
      workspace_id: z.uuid(),
      pipeline_id: z.uuid(),
      key: z.string(),
      move_to: z.string().nullish(),
    }),
    reply: Pipeline,
  },
  'cmd.pipeline.list-positions': {
    request: PipelineContactsQuery.extend({ workspace_id: z.uuid(), pipeline_id: z.uuid() }),
    reply: z.object({ positions: z.array(LeadPosition) }),
  },
  'cmd.pipeline.contact-stages': {
    request: z.object({ workspace_id: z.uuid(), contact_id: z.uuid() }),
    reply: z.object({ stages: z.array(ContactStage) }),
  },
  'cmd.pipeline.lead-history': {
    request: LeadHistoryQuery.extend({ workspace_id: z.uuid(), pipeline_id: z.uuid(), contact_id: z.uuid() }),
    reply: z.object({ moves: z.array(LeadMove) }),
  },
  'cmd.connector.prepare-template': {
    request: z.object({
      workspace_id: z.uuid(),
      integration_id: z.uuid(),
      template: TemplateSend,
    }),
    reply: z.object({ rendered_text: z.string() }),
  },
  'cmd.connector.send-template': {
    request: z.object({
      workspace_id: z.uuid(),
      integration_id: z.uuid(),
      message_id: z.uuid(),
      to: z.string().regex(/^\+\d{8,15}$/),
      template: TemplateSend,
    }),
    reply: z.object({ provider_message_id: z.string(), sent_at: z.iso.datetime() }),
  },
  'cmd.connector.refresh-templates': {
    request: z.object({ workspace_id: z.uuid(), integration_id: z.uuid() }),
    reply: z.object({ templates: z.array(CatalogueTemplate) }),
  },
  'cmd.connector.list-templates': {
    request: z.object({ workspace_id: z.uuid(), integration_id: z.uuid() }),
    reply: z.object({ templates: z.array(CatalogueTemplate), refreshed_at: z.iso.datetime().nullable() }),
  },
  'cmd.connector.get-integration': {
    request: z.object({ workspace_id: z.uuid(), integration_id: z.uuid() }),
    reply: Integration,
  },
  'cmd.connector.update-integration': {
    request: UpdateIntegrationBody.extend({ workspace_id: z.uuid(), integration_id: z.uuid() }),
    reply: Integration,
  },
  'cmd.connector.list-integrations': {
    request: z.object({ workspace_id: z.uuid() }),
    reply: z.object({ integrations: z.array(Integration) }),
  },
  'cmd.connector.create-integration': {
    request: CreateIntegrationBody.extend({ workspace_id: z.uuid() }),
    reply: CreatedIntegration,
  },
  'cmd.connector.resolve-integration': {
    request: z.object({
      workspace_id: z.uuid(),
      channel: z.enum(sendMessageChannels),
      integration_id: z.uuid().nullish(),
    }),
    reply: Integration,
  },
  'cmd.connector.send-text': {
    request: z
      .object({
        workspace_id: z.uuid(),
        integration_id: z.uuid(),
        message_id: z.uuid(),
        /** E.164 with `+`; null when the contact has no phone and `to_user_id` names it (the bot channel). */
        to: z
          .string()
          .regex(/^\+\d{8,15}$/)
          .nullable(),
        to_user_id: z.string().min(1).max(providerUserIdMaxChars).optional(),
        text: z.string(),
      })
      .refine((command) => command.to !== null || command.to_user_id !== undefined, {
        error: 'a send names its recipient by phone or by the provider user id',
      }),
    reply: z.object({ provider_message_id: z.string(), sent_at: z.iso.datetime() }),
  },
  /**
   * What the connector recorded of a message's send, read from its `sends`; never calls the provider.
   * `unrecorded`: never attempted, or attempted with no recorded outcome (the process died, the provider
   * did not answer in time), or sent more than `sendRecordRetentionDays` ago.
   */
  'cmd.connector.send-outcome': {
    request: z.object({ workspace_id: z.uuid(), message_id: z.uuid() }),
    reply: z.discriminatedUnion('outcome', [
      z.object({ outcome: z.literal('sent'), provider_message_id: z.string(), sent_at: z.iso.datetime() }),
      z.object({ outcome: z.literal('unrecorded') }),
      // A provider call started and its outcome was never learnt: the message may have been delivered.
      z.object({ outcome: z.literal('unknown') }),
    ]),
  },
  'cmd.dispatcher.create-webhook': {
    request: CreateWebhookBody.extend({ workspace_id: z.uuid() }),
    reply: Webhook,
  },
  'cmd.dispatcher.list-webhooks': {
    request: z.object({ workspace_id: z.uuid() }),
    reply: z.object({ webhooks: z.array(Webhook) }),
  },
  'cmd.dispatcher.get-webhook': { request: webhookRef, reply: Webhook },
  'cmd.dispatcher.update-webhook': { request: UpdateWebhookBody.extend(webhookRef.shape), reply: Webhook },
  'cmd.dispatcher.delete-webhook': { request: webhookRef, reply: z.object({ deleted: z.literal(true) }) },
  'cmd.dispatcher.rotate-secret': {
    request: RotateSecretBody.extend(webhookRef.shape),
    reply: z.object({ secret: z.string(), previous_secret_expires_at: z.iso.datetime().nullable() }),
  },
  'cmd.dispatcher.list-deliveries': {
    request: DeliveryQuery.extend(webhookRef.shape),
    reply: z.object({ deliveries: z.array(Delivery) }),
  },
  'cmd.dispatcher.get-delivery': {
    request: webhookRef.extend({ delivery_id: z.uuid() }),
    reply: Delivery.extend({ attempts: z.array(DeliveryAttempt) }),
  },
  'cmd.dispatcher.resend-delivery': {
    request: webhookRef.extend({ delivery_id: z.uuid() }),
    reply: z.object({ scheduled: z.literal(true) }),
  },
  'cmd.dispatcher.replay-failed': {
    request: ReplayBody.extend(webhookRef.shape),
    reply: z.object({ scheduled: z.number().int() }),
  },
  'cmd.dispatcher.send-test': { request: webhookRef, reply: Delivery },
} as const;

export type CommandSubject = keyof typeof commandCatalogue;

/**
 * The longest a connector command may spend at the provider: PROVIDER_TIMEOUT_MS is bounded by it, and
 * one such budget covers every provider call a command makes (all pages of a template list, both calls
 * of a webhook registration), not each call.
 */
export const maxProviderTimeoutMs = 15_000;

// What a handler needs besides the calls it waits on: its own queries and the reply's way back.
const handlerMarginMs = 5_000;
const defaultTimeoutMs = 10_000;

/** A command that waits on others gets their budgets plus its own margin, so the inner one answers first. */
const wrapping = (...inner: number[]) => inner.reduce((sum, ms) => sum + ms, handlerMarginMs);

const providerCommandMs = wrapping(maxProviderTimeoutMs);

/**
 * How long a caller waits for each command, derived from what the command waits on: an inner timeout
 * always answers before an outer caller gives up, so a late success is never reported as a failure
 * (a 504 while the send still happens, or a create retried into a duplicate).
 */
export const commandTimeoutsMs: Partial<Record<CommandSubject, number>> & { default: number } = {
  default: defaultTimeoutMs,
  'cmd.connector.send-text': providerCommandMs,
  'cmd.connector.send-template': providerCommandMs,
  'cmd.connector.prepare-template': providerCommandMs,
  'cmd.connector.refresh-templates': providerCommandMs,
  'cmd.connector.create-integration': providerCommandMs,
  // resolve-integration, then send-text.
  'cmd.messaging.send-message': wrapping(defaultTimeoutMs, providerCommandMs),
  'cmd.messaging.external-send': wrapping(providerCommandMs),
  // resolve-integration, prepare-template (may refresh the catalogue), then send-template.
  'cmd.messaging.send-template': wrapping(defaultTimeoutMs, providerCommandMs, providerCommandMs),
};

/** The longest any command may take: a stopping service waits this long for work in flight. */
export const longestCommandMs = Math.max(...Object.values(commandTimeoutsMs));

export function commandTimeoutMs(subject: CommandSubject): number {
  return commandTimeoutsMs[subject] ?? commandTimeoutsMs.default;
}
export type CommandRequest<S extends CommandSubject> = z.input<(typeof commandCatalogue)[S]['request']>;
export type CommandPayload<S extends CommandSubject> = z.output<(typeof commandCatalogue)[S]['request']>;
export type CommandResult<S extends CommandSubject> = z.output<(typeof commandCatalogue)[S]['reply']>;

export const CommandReply = z.discriminatedUnion('ok', [
  z.object({ ok: z.literal(true), data: z.unknown() }),
  z.object({ ok: z.literal(false), error: Failure }),
]);
export type CommandReply = z.infer<typeof CommandReply>;

/** The service that answers a subject; its replicas share the queue group of that name. */
export function serviceOf(subject: CommandSubject): string {
  return subject.split('.')[1]!;
}
