import { z } from 'zod';
import { providers } from './channels.js';
import { eventTypes } from './event-types.js';

export const WebhookContact = z.object({
  id: z.uuid().nullable(),
  phone: z.string().nullable(),
  name: z.string().nullable(),
});
export const WebhookIntegration = z.object({ id: z.uuid(), provider: z.enum(providers) });
export const messageTypes = ['text', 'image', 'audio', 'video', 'document', 'location', 'others'] as const;
export const assigneeTypes = ['human', 'agent'] as const;
export const senderTypes = ['human', 'agent', 'system'] as const;
// Parts two payloads share; unexported, so the document keeps showing them inline as before.
const webhookMessage = z.object({ id: z.uuid(), text: z.string(), type: z.enum(messageTypes) });
const assignment = z.object({
  assigned_to_type: z.enum(assigneeTypes).nullable(),
  assigned_to_id: z.uuid().nullable(),
});

/** The payloads of the public webhook events, exactly as the spec's Payloads section lists them. */
export const MessageReceived = z.object({
  event: z.literal(eventTypes.messageReceived),
  workspace_id: z.uuid(),
  conversation_id: z.uuid(),
  contact: WebhookContact,
  message: webhookMessage,
  status: assignment,
  integration: WebhookIntegration,
});
export type MessageReceived = z.infer<typeof MessageReceived>;

export const MessageSent = z.object({
  event: z.literal(eventTypes.messageSent),
  workspace_id: z.uuid(),
  conversation_id: z.uuid(),
  message: webhookMessage,
  status: z.object({ sender_type: z.enum(senderTypes) }),
  integration: WebhookIntegration,
});
export type MessageSent = z.infer<typeof MessageSent>;

export const ConversationAssigned = z.object({
  event: z.literal(eventTypes.conversationAssigned),
  workspace_id: z.uuid(),
  conversation_id: z.uuid(),
  status: assignment,
});
export type ConversationAssigned = z.infer<typeof ConversationAssigned>;

export const ConversationResolved = z.object({
  event: z.literal(eventTypes.conversationResolved),
  workspace_id: z.uuid(),
  conversation_id: z.uuid(),
  status: z.object({ value: z.literal('resolved') }),
});
export type ConversationResolved = z.infer<typeof ConversationResolved>;

/**
 * What "send test event" delivers to one endpoint, whatever events it subscribed to: never an event of
 * the platform, so a receiver that acts on those ignores it, and not on the bus (nothing happened).
 */
export const testEventType = 'webhook.test';
export const WebhookTest = z.object({
  event: z.literal(testEventType),
  workspace_id: z.uuid(),
  webhook_id: z.uuid(),
  sent_at: z.iso.datetime(),
});
export type WebhookTest = z.infer<typeof WebhookTest>;
