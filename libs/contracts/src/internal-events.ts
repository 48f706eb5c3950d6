import { z } from 'zod';
import { integrationChannels, providers, providerUserIdMaxChars } from './channels.js';
import { messageTypes } from './public-events.js';

/**
 * Events between services that no webhook receiver sees. The connector announces what providers told it;
 * messaging turns it into conversations and the public events.
 */
export const InboundMessageEvent = z
  .object({
    workspace_id: z.uuid(),
    integration: z.object({
      id: z.uuid(),
      channel: z.enum(integrationChannels),
      provider: z.enum(providers),
    }),
    provider_message_id: z.string().min(1),
    /** E.164, with `+`; null on channels without phone numbers, whose senders `from_user_id` names. */
    from: z
      .string()
      .regex(/^\+\d{8,15}$/)
      .nullable(),
    /**
     * The provider's id of the sender (a Telegram user id), on channels without phone numbers; beside
     * `from` where the provider names a sender both ways (WhatsApp's business-scoped user id, a LID).
     */
    from_user_id: z.string().min(1).max(providerUserIdMaxChars).optional(),
    name: z.string().nullable(),
    text: z.string(),
    type: z.enum(messageTypes),
    sent_at: z.iso.datetime(),
    /** True when the connector cut the text or name to its bounds (a provider sent more than they allow). */
    truncated: z.boolean().optional(),
  })
  .refine((event) => event.from !== null || event.from_user_id !== undefined, {
    error: 'an inbound message names its sender by phone or by the provider user id',
  });
export type InboundMessageEvent = z.infer<typeof InboundMessageEvent>;

export const InboundStatusEvent = z.object({
  workspace_id: z.uuid(),
  integration_id: z.uuid(),
  provider_message_id: z.string().min(1),
  status: z.enum(['sent', 'delivered', 'read', 'failed']),
  error: z.string().nullable(),
  // Optional, so events written before these fields existed still read.
  /** Our message id, when the connector sent the message and knows the provider's id for it. */
  message_id: z.uuid().nullable().optional(),
  /** The provider's error code of a failure (e.g. 131047), where it has codes. */
  error_code: z.number().int().nullable().optional(),
  /** When the provider says the status changed. */
  at: z.iso.datetime().optional(),
});
export type InboundStatusEvent = z.infer<typeof InboundStatusEvent>;

/**
 * A provider's word that every message sent to a user up to a time was delivered or read, naming no
 * message: Messenger's reads name only such a watermark, and its deliveries may omit their message ids.
 */
export const InboundWatermarkEvent = z.object({
  workspace_id: z.uuid(),
  integration_id: z.uuid(),
  /** The integration's channel, which keys its contacts' user ids. */
  channel: z.enum(integrationChannels),
  /** The user the messages went to, by the provider's id (the contact's key on its channel). */
  user_id: z.string().min(1).max(providerUserIdMaxChars),
  status: z.enum(['delivered', 'read']),
  /** Every message the provider took up to this time (its clock) is in that status. */
  up_to: z.iso.datetime(),
});
export type InboundWatermarkEvent = z.infer<typeof InboundWatermarkEvent>;

/** A contact moved between stages; with a conversation, messaging records it there as a system event. */
export const LeadMovedEvent = z.object({
  workspace_id: z.uuid(),
  contact_id: z.uuid(),
  pipeline_id: z.uuid(),
  pipeline_name: z.string(),
  from_stage: z.string().nullable(),
  from_stage_name: z.string().nullable(),
  to_stage: z.string(),
  to_stage_name: z.string(),
  conversation_id: z.uuid().nullable(),
  moved_at: z.iso.datetime(),
});
export type LeadMovedEvent = z.infer<typeof LeadMovedEvent>;

/**
 * A provider's callback the connector answered and could not keep in its database (Postgres out of
 * reach): the connector keeps it on the bus instead, and its own consumer puts it in the callback inbox
 * once Postgres takes it. A provider that delivers once (Z-API) would lose it to an error answer, and the
 * others' retries end (Evolution's in twenty minutes); the batch is the connector's own reading of the
 * verified callback.
 */
export const CallbackKeptEvent = z.object({
  workspace_id: z.uuid(),
  integration_id: z.uuid(),
  /** The verified callback as the connector read it (its messages, statuses and what it names to fetch). */
  batch: z.looseObject({ messages: z.array(z.unknown()), statuses: z.array(z.unknown()) }),
  /** The trace it came in, so its recording joins it. */
  trace_context: z.record(z.string(), z.string()),
  /** When the callback came: kept callbacks are recorded in that order. */
  received_at: z.iso.datetime(),
});
export type CallbackKeptEvent = z.infer<typeof CallbackKeptEvent>;
