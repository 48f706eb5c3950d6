import { type LeadMovedEvent, platformTexts } from '@inbox/contracts';
import type { Pool } from '@inbox/db';

/** How a lead move reads in the conversation's history. */
export function leadMovedText(move: LeadMovedEvent): string {
  return platformTexts.leadMoved(move.from_stage_name, move.to_stage_name, move.pipeline_name);
}

/**
 * Records a lead move that named a conversation as an internal `system` message there: visible in the
 * history, never sent to the provider, never announced as message.sent. The event id is the message id,
 * so a redelivered event records nothing twice.
 */
export async function recordLeadMoved(pool: Pool, eventId: string, move: LeadMovedEvent): Promise<void> {
  if (!move.conversation_id) return;
  await pool.query(
    `insert into messages (id, workspace_id, conversation_id, direction, sender_type, text, type, status, created_at)
     select $1, $2, c.id, 'internal', 'system', $4, 'text', 'recorded', $5
       from conversations c where c.workspace_id = $2 and c.id = $3
     on conflict (id) do nothing`,
    [eventId, move.workspace_id, move.conversation_id, leadMovedText(move), move.moved_at],
  );
}
