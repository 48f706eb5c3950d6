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
 * Statuses naming our messages (the reference the provider echoes) whose provider calls never reported
 * back: the provider took them, so each attempt of unknown outcome is recorded as sent, with the
 * provider's id, in one statement. Only attempts of this workspace and integration still without an id
 * are settled, each by the first status naming it; the provider's id of each settled, to our id.
 */
export async function sendsKnownByStatus(
  db: Queryable,
  workspaceId: string,
  integrationId: string,
  statuses: Array<Pick<StatusUpdate, 'providerMessageId' | 'ourMessageId' | 'at'>>,
): Promise<Map<string, string>> {
  const naming = statuses.filter((status) => status.ourMessageId !== undefined);
  if (naming.length === 0) return new Map();
  const { rows } = await db.query<{ message_id: string; provider_message_id: string }>(
    `update sends s set provider_message_id = v.provider_message_id, sent_at = v.at
       from (select distinct on (message_id) message_id, provider_message_id, at
               from unnest($3::uuid[], $4::text[], $5::timestamptz[]) with ordinality
                 as listed (message_id, provider_message_id, at, n)
              order by message_id, n) v
      where s.workspace_id = $1 and s.integration_id = $2 and s.message_id = v.message_id
        and s.provider_message_id is null
      returning s.message_id, s.provider_message_id`,
    [
      workspaceId,
      integrationId,
      naming.map((status) => status.ourMessageId),
      naming.map((status) => status.providerMessageId),
      naming.map((status) => status.at ?? new Date()),
    ],
  );
  return new Map(rows.map((row) => [row.provider_message_id, row.message_id]));
}
