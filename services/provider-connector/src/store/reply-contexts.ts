import type { Pool, PoolClient } from '@inbox/db';
import type { ReplyContext, ReplyContexts } from '../adapters/channel-adapter.js';

/** Remembers, within the caller's transaction, what a reply to this sender of the integration answers. */
export async function rememberReplyContext(
  client: PoolClient,
  integrationId: string,
  senderId: string,
  context: ReplyContext,
): Promise<void> {
  const column = context.kind === 'question' ? 'question_id' : 'pack_id';
  await client.query(
    `insert into market_reply_contexts (integration_id, buyer_id, ${column}) values ($1, $2, $3)
     on conflict (integration_id, buyer_id) do update set ${column} = excluded.${column}, updated_at = now()`,
    [integrationId, senderId, context.id],
  );
}

/** The reply contexts of one integration, every query scoped by it. */
export function replyContexts(pool: Pool, integrationId: string): ReplyContexts {
  return {
    async latest(senderId) {
      const { rows } = await pool.query<{ question_id: string | null; pack_id: string | null }>(
        'select question_id, pack_id from market_reply_contexts where integration_id = $1 and buyer_id = $2',
        [integrationId, senderId],
      );
      return rows[0] ? { questionId: rows[0].question_id, packId: rows[0].pack_id } : undefined;
    },
    async answered(senderId, questionId) {
      await pool.query(
        `update market_reply_contexts set question_id = null, updated_at = now()
          where integration_id = $1 and buyer_id = $2 and question_id = $3`,
        [integrationId, senderId, questionId],
      );
    },
  };
}
