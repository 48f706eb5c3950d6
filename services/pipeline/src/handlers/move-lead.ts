import type { Bus } from '@inbox/bus';
import {
  AppError,
  type CommandPayload,
  type CommandResult,
  errorTexts,
  eventTypes,
  type LeadMovedEvent,
} from '@inbox/contracts';
import { type OutboxRelay, type Pool, withTransaction, writeEvent } from '@inbox/db';
import { stageOf } from '../domain/stages.js';
import { PipelineStore } from '../store/pipelines.js';

export interface MoveLeadDeps {
  pool: Pool;
  bus: Bus;
  relay: OutboxRelay;
}

/** Asks messaging (which owns contacts) whether the contact exists in this workspace. */
async function requireContact(bus: Bus, workspaceId: string, contactId: string): Promise<void> {
  try {
    await bus.request('cmd.messaging.get-contact', { workspace_id: workspaceId, contact_id: contactId });
  } catch (error) {
    if (error instanceof AppError && error.status === 404)
      throw AppError.notFound(errorTexts.contactNotFound);
    throw error;
  }
}

/** The conversation must be this contact's, in this workspace. */
async function requireConversationOf(
  bus: Bus,
  workspaceId: string,
  contactId: string,
  conversationId: string,
) {
  try {
    const conversation = await bus.request('cmd.messaging.get-conversation', {
      workspace_id: workspaceId,
      conversation_id: conversationId,
      // Only whose it is matters here, not what was said.
      limit: 0,
    });
    if (conversation.contact.id === contactId) return;
  } catch (error) {
    if (!(error instanceof AppError && error.status === 404)) throw error;
  }
  throw AppError.badRequest(errorTexts.conversationNotOfContact);
}

/**
 * PATCH /api/v1/leads/{id}. Checks in the spec's terms, then one transaction: the move, its history row
 * and `lead.moved` in the outbox (which, with a conversation, becomes a system event there). Moving to
 * the current stage succeeds and records nothing. If messaging cannot answer, nothing is recorded.
 */
export async function moveLead(
  deps: MoveLeadDeps,
  command: CommandPayload<'cmd.pipeline.move-lead'>,
): Promise<CommandResult<'cmd.pipeline.move-lead'>> {
  const workspaceId = command.workspace_id;
  await requireContact(deps.bus, workspaceId, command.contact_id);
  const pipeline = await new PipelineStore(deps.pool, workspaceId).get(command.pipeline_id);
  if (!pipeline) throw AppError.badRequest(errorTexts.pipelineNotFound);
  const target = stageOf(pipeline.stages_config, command.stage);
  if (!target) throw AppError.badRequest(errorTexts.stageNotFound(command.stage, pipeline.name));
  const conversationId = command.conversation_id ?? null;
  if (conversationId) await requireConversationOf(deps.bus, workspaceId, command.contact_id, conversationId);

  const moved = await withTransaction(deps.pool, async (client) => {
    const store = new PipelineStore(client, workspaceId);
    const locked = await store.get(command.pipeline_id, { forUpdate: true });
    // The stage may have been removed since it was checked.
    if (!locked || !stageOf(locked.stages_config, command.stage)) {
      throw AppError.badRequest(errorTexts.stageNotFound(command.stage, pipeline.name));
    }
    const from = (await store.positionOf(command.pipeline_id, command.contact_id)) ?? null;
    if (from === command.stage) return false;
    const movedAt = await store.recordMove({
      pipelineId: command.pipeline_id,
      contactId: command.contact_id,
      from,
      to: command.stage,
      movedBy: command.moved_by,
      conversationId,
    });
    const data: LeadMovedEvent = {
      workspace_id: workspaceId,
      contact_id: command.contact_id,
      pipeline_id: locked.id,
      pipeline_name: locked.name,
      from_stage: from,
      from_stage_name: from ? (stageOf(locked.stages_config, from)?.name ?? from) : null,
      to_stage: command.stage,
      to_stage_name: target.name,
      conversation_id: conversationId,
      moved_at: movedAt.toISOString(),
    };
    await writeEvent(client, eventTypes.leadMoved, data);
    return true;
  });
  if (moved) deps.relay.wake();
  return {
    success: true,
    contact_id: command.contact_id,
    pipeline_id: command.pipeline_id,
    stage: command.stage,
  };
}
