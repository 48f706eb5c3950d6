import type { Queryable } from '@inbox/db';
import type { StatusUpdate } from '../adapters/channel-adapter.js';

/** Our message ids for providers' ids, of the messages this connector sent through the integration. */
export async function sentMessageIds(
  db: Queryable,
  integrationId: string,
  providerMessageIds: string[],
): Promise<Map<string, string>> {
  const { rows } = await db.query<{ provider_message_id: string; message_id: string }>(
    `select provider_message_id, message_id from sends
      where integration_id = $1 and provider_message_id = any($2::text[])`,
    [integrationId, providerMessageIds],
  );
  return new Map(rows.map((row) => [row.provider_message_id, row.message_id]));
}

/**
 * A status naming our message (the reference the provider echoes) whose provider call never reported
 * back: the provider took it, so the attempt of unknown outcome is recorded as sent, with the provider's
 * id. Only an attempt of this workspace and integration, still without an id, is settled; our id
 * otherwise, or null.
 */
export async function sendKnownByStatus(
  db: Queryable,
  workspaceId: string,
  integrationId: string,
  status: Pick<StatusUpdate, 'providerMessageId' | 'ourMessageId' | 'at'>,
): Promise<string | null> {
  if (status.ourMessageId === undefined) return null;
  const { rows } = await db.query<{ message_id: string }>(
    `update sends set provider_message_id = $4, sent_at = $5
      where workspace_id = $1 and integration_id = $2 and message_id = $3 and provider_message_id is null
      returning message_id`,
    [workspaceId, integrationId, status.ourMessageId, status.providerMessageId, status.at ?? new Date()],
  );
  return rows[0]?.message_id ?? null;
}
