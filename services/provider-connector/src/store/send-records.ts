import { firstOfEach, type Queryable, TurnBatch } from '@inbox/db';

interface Attempt {
  workspaceId: string;
  integrationId: string;
  messageId: string;
}

interface Accepted extends Attempt {
  providerMessageId: string;
  sentAt: Date;
}

const beginAttempts = `insert into sends (message_id, workspace_id, integration_id)
  select * from unnest($1::uuid[], $2::uuid[], $3::uuid[])
  on conflict (message_id) do nothing
  returning message_id`;
const recordAnswers = `insert into sends (message_id, workspace_id, integration_id, provider_message_id, sent_at)
  select * from unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::text[], $5::timestamptz[])
  on conflict (message_id) do update set provider_message_id = excluded.provider_message_id, sent_at = excluded.sent_at
   where sends.provider_message_id is null`;

/**
 * The rows that make a message's provider call happen once: its attempt, written before the call, and
 * what the provider answered, written before the command is answered. The calls of one turn of the event
 * loop share a statement (TurnBatch), each still awaited before its provider call or its answer.
 */
export class SendRecords {
  // A turn's only call runs the same statement with one row.
  private readonly begins = new TurnBatch<Attempt, boolean>({
    runBatch: async (attempts) => {
      const firsts = firstOfEach(attempts, messageKey);
      const { rows } = await this.pool.query<{ message_id: string }>(beginAttempts, [
        firsts.map((a) => a.messageId),
        firsts.map((a) => a.workspaceId),
        firsts.map((a) => a.integrationId),
      ]);
      const started = new Set(rows.map((row) => row.message_id));
      const first = new Set(firsts);
      // A message asked twice in one turn starts once: its first call, as if they had come in turn.
      return attempts.map((a) => first.has(a) && started.has(messageKey(a)));
    },
  });

  private readonly accepted = new TurnBatch<Accepted, void>({
    runBatch: async (sends) => {
      // One row per message: a second answer for it in the same turn would change nothing, as in turn.
      const firsts = firstOfEach(sends, messageKey);
      await this.pool.query(recordAnswers, [
        firsts.map((s) => s.messageId),
        firsts.map((s) => s.workspaceId),
        firsts.map((s) => s.integrationId),
        firsts.map((s) => s.providerMessageId),
        firsts.map((s) => s.sentAt.toISOString()),
      ]);
      return sends.map(() => undefined);
    },
  });

  constructor(private readonly pool: Queryable) {}

  /** Records that a message's provider call starts; false when one was already started for it. */
  begin(attempt: Attempt): Promise<boolean> {
    return this.begins.run(attempt);
  }

  /** Records the provider's id and time for a message, unless an earlier answer is recorded. */
  record(send: Accepted): Promise<void> {
    return this.accepted.run(send);
  }
}

/** Message ids are uuids: the same one may come in any case, and Postgres answers in lower case. */
const messageKey = (attempt: Attempt) => attempt.messageId.toLowerCase();
