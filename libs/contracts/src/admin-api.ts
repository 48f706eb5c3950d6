import { z } from 'zod';
import { integrationChannels } from './channels.js';
import { publicEventTypes } from './events.js';
import { isStorableString, storableString } from './validate.js';

export const workspaceStatuses = ['active', 'inactive', 'suspended'] as const;

/** The name of a workspace, member, agent or pipeline. */
const requiredName = storableString('name é obrigatório', 'name não pode conter o caractere NUL')
  .trim()
  .min(1, { error: 'name é obrigatório' })
  .max(200, { error: 'name deve ter até 200 caracteres' });

export const CreateWorkspaceBody = z.object({
  name: requiredName,
  default_country_code: z
    .string({ error: 'default_country_code deve ter de 1 a 3 dígitos' })
    .regex(/^\d{1,3}$/, { error: 'default_country_code deve ter de 1 a 3 dígitos' })
    .default('55'),
});

export const UpdateWorkspaceBody = z.object({
  status: z.enum(workspaceStatuses, { error: 'status deve ser "active", "inactive" ou "suspended"' }),
});

export const CreateIntegrationBody = z.object({
  channel: z.enum(integrationChannels, {
    error: `channel deve ser um de: ${integrationChannels.join(', ')}`,
  }),
  name: storableString('name deve ser string de até 200 caracteres')
    .max(200, { error: 'name deve ser string de até 200 caracteres' })
    .nullish(),
  config: z.record(
    storableString('config deve ser um objeto de strings'),
    storableString('config deve ser um objeto de strings'),
    { error: 'config deve ser um objeto de strings' },
  ),
});

// The URL parser would accept a NUL by percent-encoding it, but the URL is stored as sent.
const webhookUrl = z
  .url({ protocol: /^https?$/, error: 'url deve ser uma URL http(s)' })
  .refine(isStorableString, { error: 'url deve ser uma URL http(s)' });
const webhookEvents = z
  .array(z.enum(['*', ...publicEventTypes] as [string, ...string[]]), {
    error: `events deve ser uma lista de: *, ${publicEventTypes.join(', ')}`,
  })
  .min(1, { error: 'events não pode ser vazio' });
const webhookSecret = storableString('secret deve ser string de 1 a 500 caracteres')
  .min(1, { error: 'secret deve ser string de 1 a 500 caracteres' })
  .max(500, { error: 'secret deve ser string de 1 a 500 caracteres' });

const maxPerSecond = z
  .number({ error: 'max_per_second deve ser inteiro de 1 a 10000' })
  .int({ error: 'max_per_second deve ser inteiro de 1 a 10000' })
  .min(1, { error: 'max_per_second deve ser inteiro de 1 a 10000' })
  .max(10_000, { error: 'max_per_second deve ser inteiro de 1 a 10000' });

export const CreateWebhookBody = z.object({
  url: webhookUrl,
  events: webhookEvents,
  secret: webhookSecret.nullish(),
  ordered: z.boolean({ error: 'ordered deve ser booleano' }).nullish(),
  max_per_second: maxPerSecond.nullish(),
});

export const UpdateWebhookBody = z.object({
  url: webhookUrl.optional(),
  events: webhookEvents.optional(),
  enabled: z.boolean({ error: 'enabled deve ser booleano' }).optional(),
  ordered: z.boolean({ error: 'ordered deve ser booleano' }).optional(),
  max_per_second: maxPerSecond.nullable().optional(),
});

/** How long the replaced secret keeps signing; the dispatcher's WEBHOOK_SECRET_GRACE_HOURS when absent. */
const graceHours = z
  .number({ error: 'grace_hours deve ser número de 0 a 720' })
  .min(0, { error: 'grace_hours deve ser número de 0 a 720' })
  .max(720, { error: 'grace_hours deve ser número de 0 a 720' });

export const RotateSecretBody = z.object({
  secret: webhookSecret.nullish(),
  grace_hours: graceHours.nullish(),
});

export const DeliveryQuery = z.object({
  status: z
    .enum(['pending', 'delivered', 'failed'], { error: 'status deve ser pending, delivered ou failed' })
    .optional(),
  event: storableString('event deve ser string de até 200 caracteres')
    .max(200, { error: 'event deve ser string de até 200 caracteres' })
    .optional(),
  since: z.iso.datetime({ error: 'since deve ser data ISO 8601' }).optional(),
  until: z.iso.datetime({ error: 'until deve ser data ISO 8601' }).optional(),
  limit: z.coerce.number({ error: 'limit deve ser inteiro de 1 a 500' }).int().min(1).max(500).default(100),
});

export const ReplayBody = z.object({ since: z.iso.datetime({ error: 'since deve ser data ISO 8601' }) });

/** A conversation's messages come a page at a time: a long conversation must not become one huge answer. */
const pageLimitText = { error: 'limit deve ser inteiro de 0 a 200' };
export const ConversationPage = z.object({
  limit: z.coerce
    .number(pageLimitText)
    .int(pageLimitText)
    .min(0, pageLimitText)
    .max(200, pageLimitText)
    .default(50),
  before: z.uuid({ error: 'before deve ser um UUID' }).optional(),
});

export const CreateMemberBody = z.object({
  name: requiredName,
  email: z.email({ error: 'email inválido' }).max(320, { error: 'email inválido' }),
});

export const CreateAgentBody = z.object({ name: requiredName });

export const AssignBody = z
  .object({
    type: z.enum(['human', 'agent'], { error: 'type deve ser "human", "agent" ou null' }).nullable(),
    id: z.uuid({ error: 'id deve ser um UUID ou null' }).nullable(),
  })
  .refine((body) => (body.type === null) === (body.id === null), {
    error: 'type e id devem ser ambos null (remover atribuição) ou ambos preenchidos',
  });

export const UpdateIntegrationBody = z.object({
  status: z.enum(['connected', 'disconnected'], { error: 'status deve ser "connected" ou "disconnected"' }),
});

const stageKey = storableString('key deve ser string de 1 a 100 caracteres')
  .trim()
  .min(1, { error: 'key deve ser string de 1 a 100 caracteres' })
  .max(100, { error: 'key deve ser string de 1 a 100 caracteres' });
const stageName = storableString('name do estágio deve ser string de 1 a 200 caracteres')
  .trim()
  .min(1, { error: 'name do estágio deve ser string de 1 a 200 caracteres' })
  .max(200, { error: 'name do estágio deve ser string de 1 a 200 caracteres' });
export const StageConfig = z.object({ key: stageKey, name: stageName });
export type StageConfig = z.infer<typeof StageConfig>;

export const CreatePipelineBody = z.object({
  name: requiredName,
  stages: z
    .array(StageConfig, { error: 'stages deve ser uma lista de { key, name }' })
    .min(1, { error: 'stages deve ter ao menos um estágio' })
    .max(100, { error: 'stages pode ter no máximo 100 estágios' }),
});
export const RenamePipelineBody = z.object({ name: requiredName });
export const AddStageBody = StageConfig.extend({
  position: z.number({ error: 'position deve ser inteiro >= 0' }).int().min(0).optional(),
});
export const RenameStageBody = z.object({ name: stageName });
export const ReorderStagesBody = z.object({
  keys: z.array(stageKey, { error: 'keys deve ser a lista de todas as chaves na nova ordem' }),
});
