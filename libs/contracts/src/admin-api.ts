import { z } from 'zod';
import { integrationChannels } from './channels.js';
import { platformTexts } from './error-texts.js';
import { publicEventTypes } from './events.js';
import { ExternalSendBody, MoveLeadBody } from './public-api.js';
import { isStorableString, ofCharacters, storableString, storableText } from './validate.js';
import { integrationConfigLimits } from './workspace-limits.js';

export const workspaceStatuses = ['active', 'inactive', 'suspended'] as const;

/** The name of a workspace, member, agent or pipeline. */
const requiredName = ofCharacters(
  storableString(platformTexts.nameRequired, platformTexts.nameNul)
    .trim()
    .min(1, { error: platformTexts.nameRequired }),
  0,
  200,
  platformTexts.nameTooLong,
);

export const CreateWorkspaceBody = z.object({
  name: requiredName,
  default_country_code: z
    .string({ error: platformTexts.countryCodeInvalid })
    .regex(/^\d{1,3}$/, { error: platformTexts.countryCodeInvalid })
    .default('55'),
});

export const UpdateWorkspaceBody = z.object({
  status: z.enum(workspaceStatuses, { error: platformTexts.workspaceStatusInvalid }),
});

const configTooLarge = platformTexts.configTooLarge(
  integrationConfigLimits.keys,
  integrationConfigLimits.valueChars,
);

export const CreateIntegrationBody = z.object({
  channel: z.enum(integrationChannels, {
    error: platformTexts.integrationChannelInvalid(integrationChannels),
  }),
  name: storableText(platformTexts.mustBeString('name', 200), 0, 200).nullish(),
  config: z
    .record(
      storableString(platformTexts.configNotStrings),
      ofCharacters(
        storableString(platformTexts.configNotStrings),
        0,
        integrationConfigLimits.valueChars,
        configTooLarge,
      ),
      { error: platformTexts.configNotStrings },
    )
    .refine((config) => Object.keys(config).length <= integrationConfigLimits.keys, {
      error: configTooLarge,
    }),
});

// The URL parser would accept a NUL by percent-encoding it, but the URL is stored as sent.
const webhookUrl = z
  .url({ protocol: /^https?$/, error: platformTexts.webhookUrlInvalid })
  .refine(isStorableString, { error: platformTexts.webhookUrlInvalid });
const webhookEvents = z
  .array(z.enum(['*', ...publicEventTypes] as [string, ...string[]]), {
    error: platformTexts.webhookEventsInvalid(publicEventTypes),
  })
  .min(1, { error: platformTexts.webhookEventsEmpty });
const webhookSecret = storableText(platformTexts.webhookSecretInvalid, 1, 500);

const maxPerSecond = z
  .number({ error: platformTexts.maxPerSecondInvalid })
  .int({ error: platformTexts.maxPerSecondInvalid })
  .min(1, { error: platformTexts.maxPerSecondInvalid })
  .max(10_000, { error: platformTexts.maxPerSecondInvalid });

export const CreateWebhookBody = z.object({
  url: webhookUrl,
  events: webhookEvents,
  secret: webhookSecret.nullish(),
  ordered: z.boolean({ error: platformTexts.mustBeBoolean('ordered') }).nullish(),
  max_per_second: maxPerSecond.nullish(),
});

export const UpdateWebhookBody = z.object({
  url: webhookUrl.optional(),
  events: webhookEvents.optional(),
  enabled: z.boolean({ error: platformTexts.mustBeBoolean('enabled') }).optional(),
  ordered: z.boolean({ error: platformTexts.mustBeBoolean('ordered') }).optional(),
  max_per_second: maxPerSecond.nullable().optional(),
});

/** How long the replaced secret keeps signing; the dispatcher's WEBHOOK_SECRET_GRACE_HOURS when absent. */
const graceHours = z
  .number({ error: platformTexts.graceHoursInvalid })
  .min(0, { error: platformTexts.graceHoursInvalid })
  .max(720, { error: platformTexts.graceHoursInvalid });

export const RotateSecretBody = z.object({
  secret: webhookSecret.nullish(),
  grace_hours: graceHours.nullish(),
});

export const DeliveryQuery = z.object({
  status: z
    .enum(['pending', 'delivered', 'failed'], { error: platformTexts.deliveryStatusInvalid })
    .optional(),
  event: storableText(platformTexts.mustBeString('event', 200), 0, 200).optional(),
  since: z.iso.datetime({ error: platformTexts.mustBeIsoDate('since') }).optional(),
  until: z.iso.datetime({ error: platformTexts.mustBeIsoDate('until') }).optional(),
  /**
   * The next page: the deliveries after this one, newest first. Many deliveries share a creation time
   * (one batch of events is scheduled at once), so `until` set to the last one's time would skip the rest.
   */
  before: z.uuid({ error: platformTexts.mustBeUuid('before') }).optional(),
  limit: z.coerce.number({ error: platformTexts.deliveryLimitInvalid }).int().min(1).max(500).default(100),
});

export const ReplayBody = z.object({
  since: z.iso.datetime({ error: platformTexts.mustBeIsoDate('since') }),
});

/** A conversation's messages come a page at a time: a long conversation must not become one huge answer. */
const pageLimitText = { error: platformTexts.pageLimitInvalid };
export const ConversationPage = z.object({
  limit: z.coerce
    .number(pageLimitText)
    .int(pageLimitText)
    .min(0, pageLimitText)
    .max(200, pageLimitText)
    .default(50),
  before: z.uuid({ error: platformTexts.mustBeUuid('before') }).optional(),
});

/**
 * Messages a provider failed after accepting them, newest first: since a time, a page at a time, the next
 * page after the last message of one (`before`).
 */
export const FailedMessagesQuery = z.object({
  since: z.iso.datetime({ error: platformTexts.mustBeIsoDate('since') }).optional(),
  before: z.uuid({ error: platformTexts.mustBeUuid('before') }).optional(),
  limit: z.coerce
    .number(pageLimitText)
    .int(pageLimitText)
    .min(0, pageLimitText)
    .max(200, pageLimitText)
    .default(50),
});

/** The panel's inbox: conversations with the newest activity first, a page at a time, maybe of one status. */
export const ConversationListQuery = z.object({
  status: z
    .enum(['open', 'assigned', 'resolved'], { error: platformTexts.conversationStatusInvalid })
    .optional(),
  limit: ConversationPage.shape.limit,
  before: z.uuid({ error: platformTexts.mustBeUuid('before') }).optional(),
});

/** A reply written in the panel: an external send by a person, so `sender_type` is `human`. */
export const ReplyBody = z.object({
  text: ExternalSendBody.shape.text,
  sender_name: ExternalSendBody.shape.sender_name,
});

/** The cards of a funnel's board: the contacts most recently moved, up to `limit`. */
export const PipelineContactsQuery = z.object({
  limit: z.coerce.number({ error: platformTexts.deliveryLimitInvalid }).int().min(1).max(500).default(200),
});

/**
 * A contact's moves in a pipeline, oldest first, a page at a time: the next page after the last move of
 * one (`after`). Lead moves may be made 60 a minute onto one contact, so its history grows without end.
 */
export const LeadHistoryQuery = z.object({
  after: z.uuid({ error: platformTexts.mustBeUuid('after') }).optional(),
  limit: z.coerce
    .number(pageLimitText)
    .int(pageLimitText)
    .min(0, pageLimitText)
    .max(200, pageLimitText)
    .default(100),
});

/** Moving a card on the board: the lead move, without the pipeline (the path names it). */
export const MoveContactBody = MoveLeadBody.pick({ stage: true, conversation_id: true });

export const CreateMemberBody = z.object({
  name: requiredName,
  email: z.email({ error: platformTexts.emailInvalid }).max(320, { error: platformTexts.emailInvalid }),
});

export const CreateAgentBody = z.object({ name: requiredName });

export const AssignBody = z
  .object({
    type: z.enum(['human', 'agent'], { error: platformTexts.assigneeTypeInvalid }).nullable(),
    id: z.uuid({ error: platformTexts.assigneeIdInvalid }).nullable(),
  })
  .refine((body) => (body.type === null) === (body.id === null), {
    error: platformTexts.assigneeHalfGiven,
  });

export const UpdateIntegrationBody = z.object({
  status: z.enum(['connected', 'disconnected'], { error: platformTexts.integrationStatusInvalid }),
});

const stageKey = ofCharacters(
  storableString(platformTexts.stageKeyInvalid).trim(),
  1,
  100,
  platformTexts.stageKeyInvalid,
);
const stageName = ofCharacters(
  storableString(platformTexts.stageNameInvalid).trim(),
  1,
  200,
  platformTexts.stageNameInvalid,
);
export const StageConfig = z.object({ key: stageKey, name: stageName });
export type StageConfig = z.infer<typeof StageConfig>;

export const CreatePipelineBody = z.object({
  name: requiredName,
  stages: z
    .array(StageConfig, { error: platformTexts.stagesNotList })
    .min(1, { error: platformTexts.stagesEmpty })
    .max(100, { error: platformTexts.stagesTooMany }),
});
export const RenamePipelineBody = z.object({ name: requiredName });
export const AddStageBody = StageConfig.extend({
  position: z.number({ error: platformTexts.stagePositionInvalid }).int().min(0).optional(),
});
export const RenameStageBody = z.object({ name: stageName });
export const ReorderStagesBody = z.object({
  keys: z.array(stageKey, { error: platformTexts.stageKeysNotList }),
});
