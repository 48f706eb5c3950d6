import type { Provider } from '@inbox/contracts';
import type { Queryable } from '@inbox/db';

const iso = (value: Date | null) => (value ? value.toISOString() : null);

/** Text carried by one page of messages at most; a NATS message carries 1 MiB by default. */
export const pageBytes = 256 * 1024;

interface ConversationViewRow {
  id: string;
  contact_id: string;
  phone: string | null;
  name: string | null;
  integration_id: string;
  channel: string;
  provider: Provider;
  status: 'open' | 'assigned' | 'resolved';
  assigned_to_type: 'human' | 'agent' | null;
  assigned_to_id: string | null;
  last_inbound_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

const viewColumns = `c.id, c.contact_id, k.phone, k.name, c.integration_id, c.channel, c.provider, c.status,
       c.assigned_to_type, c.assigned_to_id, c.last_inbound_at, c.created_at, c.updated_at`;

function toView(row: ConversationViewRow) {
  return {
    id: row.id,
    contact: { id: row.contact_id, phone: row.phone, name: row.name },
    integration: { id: row.integration_id, channel: row.channel, provider: row.provider },
    status: row.status,
    assigned_to_type: row.assigned_to_type,
    assigned_to_id: row.assigned_to_id,
    last_inbound_at: iso(row.last_inbound_at),
    created_at: iso(row.created_at)!,
    updated_at: iso(row.updated_at)!,
  };
}

/** How much of the newest message the inbox shows beside each conversation. */
export const previewLength = 200;

/** Read models of the panel: the inbox, a conversation with its contact and messages, contacts. */
export class ConversationViews {
  constructor(
    private readonly db: Queryable,
    private readonly workspaceId: string,
  ) {}

  async conversation(conversationId: string) {
    const { rows } = await this.db.query<ConversationViewRow>(
      `select ${viewColumns}
         from conversations c join contacts k on k.id = c.contact_id and k.workspace_id = c.workspace_id
        where c.workspace_id = $1 and c.id = $2`,
      [this.workspaceId, conversationId],
    );
    return rows[0] ? toView(rows[0]) : undefined;
  }

  /**
   * A page of the inbox: the conversations with the latest activity first (optionally of one status),
   * or those after the conversation `before` in that order, each with a preview of its newest message.
   * Activity moves a conversation up, so a page read later may repeat or skip one that moved meanwhile.
   */
  async conversationPage(page: { status?: string; limit: number; before?: string }) {
    if (page.limit === 0) return { conversations: [], olderBefore: null };
    const { rows } = await this.db.query<
      ConversationViewRow & { last_text: string | null; last_direction: string | null; last_at: Date | null }
    >(
      `select ${viewColumns}, m.text as last_text, m.direction as last_direction, m.created_at as last_at
         from conversations c
         join contacts k on k.id = c.contact_id and k.workspace_id = c.workspace_id
         left join lateral (
           select left(text, ${previewLength}) as text, direction, created_at from messages
            where workspace_id = c.workspace_id and conversation_id = c.id
            order by created_at desc, id desc limit 1) m on true
        where c.workspace_id = $1 and ($2::text is null or c.status = $2)
          and ($4::uuid is null or (c.updated_at, c.id) < (
                select updated_at, id from conversations where workspace_id = $1 and id = $4))
        order by c.updated_at desc, c.id desc
        limit $3`,
      [this.workspaceId, page.status ?? null, page.limit + 1, page.before ?? null],
    );
    const more = rows.length > page.limit;
    const conversations = rows.slice(0, page.limit).map((row) => ({
      ...toView(row),
      last_message:
        row.last_at === null
          ? null
          : {
              text: row.last_text!,
              direction: row.last_direction as 'inbound' | 'outbound' | 'internal',
              created_at: iso(row.last_at)!,
            },
    }));
    return { conversations, olderBefore: more ? conversations.at(-1)!.id : null };
  }

  /**
   * A page of the conversation's messages, oldest first: the newest `limit`, or those older than the
   * message `before`. A page also stops at `pageBytes` of text, so one answer stays well inside what the
   * bus carries however long the messages are; `olderBefore` names where the next older page starts.
   */
  async messagePage(conversationId: string, page: { limit: number; before?: string }) {
    if (page.limit === 0) return { messages: [], olderBefore: null };
    const { rows } = await this.db.query(
      `select id, direction, sender_type, sender_name, text, type, status, delivery_status, provider_message_id,
              coalesce(error, delivery_error) as error, delivery_error_code, delivery_failed_at, created_at, sent_at
         from messages m
        where workspace_id = $1 and conversation_id = $2
          and ($4::uuid is null or (created_at, id) < (
                select created_at, id from messages where workspace_id = $1 and conversation_id = $2 and id = $4))
        order by created_at desc, id desc
        limit $3`,
      [this.workspaceId, conversationId, page.limit + 1, page.before ?? null],
    );
    const newestFirst = rows.slice(0, page.limit);
    let bytes = 0;
    let kept = 0;
    for (const row of newestFirst) {
      bytes += Buffer.byteLength(String(row.text)) + Buffer.byteLength(String(row.error ?? ''));
      // The newest message is always kept, so paging always moves on.
      if (kept > 0 && bytes > pageBytes) break;
      kept++;
    }
    const more = kept < rows.length;
    const messages = newestFirst
      .slice(0, kept)
      .reverse()
      .map((row) => ({
        ...row,
        created_at: iso(row.created_at)!,
        sent_at: iso(row.sent_at),
        delivery_failed_at: iso(row.delivery_failed_at),
      }));
    return { messages, olderBefore: more ? (messages[0]?.id as string) : null };
  }

  /**
   * Outbound messages a provider accepted and later reported failed, newest failure first, since a time;
   * each message's text counts against the same byte bound as a conversation page, which may end a page
   * early: the next starts after its last message (`before`), so none is out of reach.
   */
  async failedMessages(page: { since?: string; before?: string; limit: number }) {
    if (page.limit === 0) return [];
    const { rows } = await this.db.query<{
      id: string;
      conversation_id: string;
      integration_id: string;
      channel: string;
      text: string;
      provider_message_id: string | null;
      delivery_error_code: number | null;
      error: string | null;
      sent_at: Date | null;
      delivery_failed_at: Date;
    }>(
      `select m.id, m.conversation_id, c.integration_id, c.channel, m.text, m.provider_message_id,
              m.delivery_error_code, coalesce(m.delivery_error, m.error) as error, m.sent_at, m.delivery_failed_at
         from messages m join conversations c on c.id = m.conversation_id and c.workspace_id = m.workspace_id
        where m.workspace_id = $1 and m.delivery_status = 'failed' and m.delivery_failed_at is not null
          and ($3::timestamptz is null or m.delivery_failed_at >= $3)
          and ($4::uuid is null or (m.delivery_failed_at, m.id) < (
                select delivery_failed_at, id from messages where workspace_id = $1 and id = $4))
        order by m.delivery_failed_at desc, m.id desc
        limit $2`,
      [this.workspaceId, page.limit, page.since ?? null, page.before ?? null],
    );
    let bytes = 0;
    const kept = rows.filter((row, index) => {
      bytes += Buffer.byteLength(row.text) + Buffer.byteLength(row.error ?? '');
      return index === 0 || bytes <= pageBytes;
    });
    return kept.map((row) => ({
      id: row.id,
      conversation_id: row.conversation_id,
      integration: { id: row.integration_id, channel: row.channel },
      text: row.text,
      provider_message_id: row.provider_message_id,
      delivery_error_code: row.delivery_error_code,
      error: row.error,
      sent_at: iso(row.sent_at),
      failed_at: iso(row.delivery_failed_at)!,
    }));
  }

  /** The contacts of this workspace among `ids`; ids of other workspaces or of no contact are left out. */
  async contacts(ids: string[]) {
    const { rows } = await this.db.query<{
      id: string;
      phone: string | null;
      name: string | null;
      created_at: Date;
    }>('select id, phone, name, created_at from contacts where workspace_id = $1 and id = any($2::uuid[])', [
      this.workspaceId,
      ids,
    ]);
    return rows.map((row) => ({ ...row, created_at: iso(row.created_at)! }));
  }

  async contact(contactId: string) {
    const { rows } = await this.db.query<{
      id: string;
      phone: string | null;
      name: string | null;
      created_at: Date;
    }>('select id, phone, name, created_at from contacts where workspace_id = $1 and id = $2', [
      this.workspaceId,
      contactId,
    ]);
    return rows[0] ? { ...rows[0], created_at: iso(rows[0].created_at)! } : undefined;
  }
}
