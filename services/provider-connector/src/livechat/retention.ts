import { inBatches, type Queryable } from '@inbox/db';
import { type Logger, Periodic } from '@inbox/service-kit';
import { meter } from '@inbox/telemetry';
import { sessionIdleMs } from './store.js';

/**
 * How long live chat messages are kept, and a session that has none left: a day past the session's end
 * (sessionIdleMs). A request that found its session live has a day to write to it before either is
 * deleted, so the pruner never takes a session from under a message being added to it.
 */
export const livechatRetentionMs = sessionIdleMs + 86_400_000;

const pruned = meter('connector').createCounter('connector.livechat.pruned', {
  description: 'Live chat messages and sessions deleted once past their retention',
});

/**
 * Deletes messages past `retentionMs`, oldest first, `size` a statement. Messages are old in `seq` order
 * (a message's time is its transaction's start), so each statement takes the next `size` seqs and
 * deletes them if old: one that finds a younger message among them is the last. The statements go on
 * from the seq the last one reached, never again over the index entries it left dead.
 */
export async function pruneLivechatMessages(
  db: Queryable,
  { retentionMs = livechatRetentionMs, batchSize = 2_000 } = {},
): Promise<number> {
  let after = '0';
  return inBatches(async (size) => {
    const { rows } = await db.query<{ last: string | null; deleted: number }>(
      `with gone as (
         delete from livechat_messages where seq = any(array(
           select seq from livechat_messages where seq > $1 order by seq limit $2))
           and created_at < now() - $3 * interval '1 millisecond'
         returning seq)
       select max(seq)::text as last, count(*)::int as deleted from gone`,
      [after, size, retentionMs],
    );
    after = rows[0]?.last ?? after;
    return rows[0]?.deleted ?? 0;
  }, batchSize);
}

/**
 * Deletes the sessions opened before `retentionMs` that have no message left, `size` sessions looked at
 * a statement, oldest first, behind a cursor: a session still written to after a month is passed over,
 * and not looked at again in the same run. A session's time is kept as text so no microsecond is lost.
 */
export async function pruneLivechatSessions(
  db: Queryable,
  { retentionMs = livechatRetentionMs, batchSize = 500 } = {},
): Promise<number> {
  let cursor: { at: string; id: string } | undefined;
  let deleted = 0;
  await inBatches(async (size) => {
    const { rows } = await db.query<{ at: string; id: string; looked: number; deleted: number }>(
      `with batch as (
         select id, created_at from livechat_sessions
          where created_at < now() - $3 * interval '1 millisecond'
            and (created_at, id) > (coalesce($1::timestamptz, '-infinity'),
                                    coalesce($2::uuid, '00000000-0000-0000-0000-000000000000'))
          order by created_at, id limit $4),
       gone as (
         delete from livechat_sessions s using batch b
          where s.id = b.id and not exists (select from livechat_messages m where m.session_id = s.id)
         returning s.id)
       select last.created_at::text as at, last.id,
              (select count(*) from batch)::int as looked, (select count(*) from gone)::int as deleted
         from (select created_at, id from batch order by created_at desc, id desc limit 1) last`,
      [cursor?.at ?? null, cursor?.id ?? null, retentionMs, size],
    );
    const row = rows[0];
    if (!row) return 0;
    cursor = { at: row.at, id: row.id };
    deleted += row.deleted;
    return row.looked;
  }, batchSize);
  return deleted;
}

/** Both, messages first (a session is deleted once it has none), and says how many of each. */
export async function pruneLivechat(db: Queryable): Promise<{ messages: number; sessions: number }> {
  const messages = await pruneLivechatMessages(db);
  const sessions = await pruneLivechatSessions(db);
  if (messages > 0) pruned.add(messages, { kind: 'message' });
  if (sessions > 0) pruned.add(sessions, { kind: 'session' });
  return { messages, sessions };
}

/** pruneLivechat every ten minutes, beside the widget's requests and never inside one. */
export const livechatPruner = (db: Queryable, logger: Logger) =>
  new Periodic(
    () => pruneLivechat(db),
    10 * 60_000,
    (error) => logger.warn({ err: error }, 'pruning live chat sessions failed'),
  );
