import type { EventData, Provider } from '@inbox/contracts';
import type { Assignee } from './conversation-state.js';

/** The spec's payloads, built in one place so every path that emits an event emits the same shape. */
export const eventPayloads = {
  assigned(
    workspaceId: string,
    conversationId: string,
    assignee: Assignee,
  ): EventData<'conversation.assigned'> {
    return {
      event: 'conversation.assigned',
      workspace_id: workspaceId,
      conversation_id: conversationId,
      status: { assigned_to_type: assignee?.type ?? null, assigned_to_id: assignee?.id ?? null },
    };
  },

  resolved(workspaceId: string, conversationId: string): EventData<'conversation.resolved'> {
    return {
      event: 'conversation.resolved',
      workspace_id: workspaceId,
      conversation_id: conversationId,
      status: { value: 'resolved' },
    };
  },

  received(input: {
    workspaceId: string;
    conversationId: string;
    contact: { id: string; phone: string; name: string | null };
    message: { id: string; text: string; type: EventData<'message.received'>['message']['type'] };
    assignee: Assignee;
    integration: { id: string; provider: Provider };
  }): EventData<'message.received'> {
    return {
      event: 'message.received',
      workspace_id: input.workspaceId,
      conversation_id: input.conversationId,
      contact: input.contact,
      message: input.message,
      status: { assigned_to_type: input.assignee?.type ?? null, assigned_to_id: input.assignee?.id ?? null },
      integration: input.integration,
    };
  },
};
