import {
  type ConversationAssigned,
  type ConversationResolved,
  eventTypes,
  type MessageReceived,
  type Provider,
} from '@inbox/contracts';
import type { Assignee } from './conversation-state.js';

/** The spec's payloads, built in one place so every path that emits an event emits the same shape. */
export const eventPayloads = {
  assigned(workspaceId: string, conversationId: string, assignee: Assignee): ConversationAssigned {
    return {
      event: eventTypes.conversationAssigned,
      workspace_id: workspaceId,
      conversation_id: conversationId,
      status: { assigned_to_type: assignee?.type ?? null, assigned_to_id: assignee?.id ?? null },
    };
  },

  resolved(workspaceId: string, conversationId: string): ConversationResolved {
    return {
      event: eventTypes.conversationResolved,
      workspace_id: workspaceId,
      conversation_id: conversationId,
      status: { value: 'resolved' },
    };
  },

  received(input: {
    workspaceId: string;
    conversationId: string;
    contact: { id: string; phone: string | null; name: string | null };
    message: MessageReceived['message'];
    assignee: Assignee;
    integration: { id: string; provider: Provider };
  }): MessageReceived {
    return {
      event: eventTypes.messageReceived,
      workspace_id: input.workspaceId,
      conversation_id: input.conversationId,
      contact: input.contact,
      message: input.message,
      status: { assigned_to_type: input.assignee?.type ?? null, assigned_to_id: input.assignee?.id ?? null },
      integration: input.integration,
    };
  },
};
