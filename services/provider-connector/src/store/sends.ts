import { sendRecordRetentionDays } from '@inbox/contracts';
import type { Queryable } from '@inbox/db';
import type { StatusUpdate } from '../adapters/channel-adapter.js';

/**
 * How long a send the provider accepted is remembered (`sendRecordRetentionDays`): a repeated command for
 * the message is answered from it, and a status callback finds our message by it. A watermark reaches as
 * far back (messaging's watermarkReachDays); a status later still is of a message long out of mind.
 */
export const sendRetentionMs = sendRecordRetentionDays * 24 * 3_600_000;

/**
 * Deletes up to `batchSize` sends known sent before the retention, oldest first, and says how many: by
 * when they were known sent, so an attempt a status settled a month on is kept for messaging's
 * reconciliation to learn it. An attempt of unknown outcome (no provider id) is never deleted: it is what
 * keeps the message from being sent twice. Replicas may prune at once: each skips the rows another is
 * deleting.
 */
export async function pruneSends(db: Queryable, retentionMs: number, batchSize: number): Promise<number> {
  const { rowCount } = await db.query(
    `delete from sends where ctid = any(array(
       select ctid from sends
        where provider_message_id is not null and sent_at < now() - $1 * interval '1 millisecond'
        order by sent_at limit $2 for update skip locked))`,
    [retentionMs, batchSize],
  );
  return rowCount ?? 0;
}

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
