import { z } from 'zod';
import { providers } from './channels.js';

export const WebhookContact = z.object({
  id: z.uuid().nullable(),
  phone: z.string().nullable(),
  name: z.string().nullable(),
});
export const WebhookIntegration = z.object({ id: z.uuid(), provider: z.enum(providers) });
export const messageTypes = ['text', 'image', 'audio', 'video', 'document', 'location', 'others'] as const;
export const assigneeTypes = ['human', 'agent'] as const;
export const senderTypes = ['human', 'agent', 'system'] as const;

/** The payloads of the public webhook events, exactly as the spec's Payloads section lists them. */
export const MessageReceived = z.object({
  event: z.literal('message.received'),
  workspace_id: z.uuid(),
  conversation_id: z.uuid(),
  contact: WebhookContact,
  message: z.object({ id: z.uuid(), text: z.string(), type: z.enum(messageTypes) }),
  status: z.object({
    assigned_to_type: z.enum(assigneeTypes).nullable(),
    assigned_to_id: z.uuid().nullable(),
  }),
  integration: WebhookIntegration,
});

export const MessageSent = z.object({
  event: z.literal('message.sent'),
  workspace_id: z.uuid(),
  conversation_id: z.uuid(),
  message: z.object({ id: z.uuid(), text: z.string(), type: z.enum(messageTypes) }),
  status: z.object({ sender_type: z.enum(senderTypes) }),
  integration: WebhookIntegration,
});

export const ConversationAssigned = z.object({
  event: z.literal('conversation.assigned'),
  workspace_id: z.uuid(),
  conversation_id: z.uuid(),
  status: z.object({
    assigned_to_type: z.enum(assigneeTypes).nullable(),
    assigned_to_id: z.uuid().nullable(),
  }),
});

export const ConversationResolved = z.object({
  event: z.literal('conversation.resolved'),
  workspace_id: z.uuid(),
  conversation_id: z.uuid(),
  status: z.object({ value: z.literal('resolved') }),
});

/** Every event on the bus: its type names the subject `evt.<type>`; the public ones are webhook payloads. */
export const eventCatalogue = {
  'message.received': MessageReceived,
  'message.sent': MessageSent,
  'conversation.assigned': ConversationAssigned,
  'conversation.resolved': ConversationResolved,
} as const;
export type EventType = keyof typeof eventCatalogue;
export type EventData<T extends EventType> = z.infer<(typeof eventCatalogue)[T]>;
export const publicEventTypes = Object.keys(eventCatalogue) as EventType[];

export const EventEnvelope = z.object({
  id: z.uuid(),
  type: z.string(),
  workspace_id: z.uuid(),
  occurred_at: z.iso.datetime(),
  data: z.unknown(),
});
export type EventEnvelope<D = unknown> = Omit<z.infer<typeof EventEnvelope>, 'data'> & { data: D };

export const eventSubject = (type: string) => `evt.${type}`;
