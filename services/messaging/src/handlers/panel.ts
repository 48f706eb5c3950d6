import {
  AppError,
  type CommandPayload,
  type CommandResult,
  errorTexts,
  eventTypes,
  platformTexts,
} from '@inbox/contracts';
import { type OutboxRelay, type Pool, withTransaction, writeEvent } from '@inbox/db';
import type { Assignee } from '../domain/conversation-state.js';
import { eventPayloads } from '../domain/events.js';
import { ConversationViews } from '../store/conversation-views.js';
import { ConversationStore } from '../store/conversations.js';
import { TeamStore } from '../store/team.js';

export interface PanelDeps {
  pool: Pool;
  relay: OutboxRelay;
}

async function viewOf(deps: PanelDeps, workspaceId: string, conversationId: string) {
  const view = await new ConversationViews(deps.pool, workspaceId).conversation(conversationId);
  if (!view) throw AppError.notFound(errorTexts.conversationNotFound);
  return view;
}

export const panel = {
  createMember: (deps: PanelDeps, command: CommandPayload<'cmd.messaging.create-member'>) =>
    new TeamStore(deps.pool, command.workspace_id).createMember(command.name, command.email),

  createAgent: (deps: PanelDeps, command: CommandPayload<'cmd.messaging.create-agent'>) =>
    new TeamStore(deps.pool, command.workspace_id).createAgent(command.name),

  listMembers: async (deps: PanelDeps, command: CommandPayload<'cmd.messaging.list-members'>) => ({
    members: await new TeamStore(deps.pool, command.workspace_id).members(),
  }),

  listAgents: async (deps: PanelDeps, command: CommandPayload<'cmd.messaging.list-agents'>) => ({
    agents: await new TeamStore(deps.pool, command.workspace_id).agents(),
  }),

  async listConversations(
    deps: PanelDeps,
    command: CommandPayload<'cmd.messaging.list-conversations'>,
  ): Promise<CommandResult<'cmd.messaging.list-conversations'>> {
    const { conversations, olderBefore } = await new ConversationViews(
      deps.pool,
      command.workspace_id,
    ).conversationPage(command);
    return { conversations, older_before: olderBefore };
  },

  listContacts: async (deps: PanelDeps, command: CommandPayload<'cmd.messaging.list-contacts'>) => ({
    contacts: await new ConversationViews(deps.pool, command.workspace_id).contacts(command.contact_ids),
  }),

  /** Assigns to a member or an AI agent, or removes the assignment; a change emits conversation.assigned. */
  async assign(
    deps: PanelDeps,
    command: CommandPayload<'cmd.messaging.assign'>,
  ): Promise<CommandResult<'cmd.messaging.assign'>> {
    const workspaceId = command.workspace_id;
    const assignee: Assignee = command.type && command.id ? { type: command.type, id: command.id } : null;
    await withTransaction(deps.pool, async (client) => {
      const store = new ConversationStore(client, workspaceId);
      const conversation = await store.lock(command.conversation_id);
      if (!conversation) throw AppError.notFound(errorTexts.conversationNotFound);
      if (assignee && !(await new TeamStore(client, workspaceId).exists(assignee.type, assignee.id))) {
        throw AppError.badRequest(
          assignee.type === 'human' ? platformTexts.assigneeNotMember : platformTexts.assigneeNotAgent,
        );
      }
      const unchanged =
        conversation.assigned_to_type === (assignee?.type ?? null) &&
        conversation.assigned_to_id === (assignee?.id ?? null);
      if (unchanged) return;
      await store.setAssignment(conversation, assignee);
      await writeEvent(
        client,
        eventTypes.conversationAssigned,
        eventPayloads.assigned(workspaceId, conversation.id, assignee),
      );
    });
    deps.relay.wake();
    return viewOf(deps, workspaceId, command.conversation_id);
  },

  /** Marks the conversation resolved; resolving a resolved conversation changes and emits nothing. */
  async resolve(
    deps: PanelDeps,
    command: CommandPayload<'cmd.messaging.resolve'>,
  ): Promise<CommandResult<'cmd.messaging.resolve'>> {
    const workspaceId = command.workspace_id;
    await withTransaction(deps.pool, async (client) => {
      const store = new ConversationStore(client, workspaceId);
      const conversation = await store.lock(command.conversation_id);
      if (!conversation) throw AppError.notFound(errorTexts.conversationNotFound);
      if (conversation.status === 'resolved') return;
      await store.setResolved(conversation.id);
      await writeEvent(
        client,
        eventTypes.conversationResolved,
        eventPayloads.resolved(workspaceId, conversation.id),
      );
    });
    deps.relay.wake();
    return viewOf(deps, workspaceId, command.conversation_id);
  },

  async getConversation(
    deps: PanelDeps,
    command: CommandPayload<'cmd.messaging.get-conversation'>,
  ): Promise<CommandResult<'cmd.messaging.get-conversation'>> {
    const view = await viewOf(deps, command.workspace_id, command.conversation_id);
    const { messages, olderBefore } = await new ConversationViews(
      deps.pool,
      command.workspace_id,
    ).messagePage(view.id, command);
    return { ...view, messages, older_before: olderBefore };
  },

  async listFailedMessages(
    deps: PanelDeps,
    command: CommandPayload<'cmd.messaging.list-failed-messages'>,
  ): Promise<CommandResult<'cmd.messaging.list-failed-messages'>> {
    const views = new ConversationViews(deps.pool, command.workspace_id);
    return { messages: await views.failedMessages(command) };
  },

  async getContact(
    deps: PanelDeps,
    command: CommandPayload<'cmd.messaging.get-contact'>,
  ): Promise<CommandResult<'cmd.messaging.get-contact'>> {
    const contact = await new ConversationViews(deps.pool, command.workspace_id).contact(command.contact_id);
    if (!contact) throw AppError.notFound(errorTexts.contactNotFound);
    return contact;
  },
};
