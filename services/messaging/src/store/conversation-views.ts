import type { Queryable } from '@inbox/db';

const iso = (value: Date | null) => (value ? value.toISOString() : null);

interface ConversationViewRow {
  id: string;
  contact_id: string;
  phone: string;
  name: string | null;
  integration_id: string;
  channel: string;
  provider: 'chat-official' | 'chat' | 'bot' | 'photo' | 'social' | 'livechat' | 'market';
  status: 'open' | 'assigned' | 'resolved';
  assigned_to_type: 'human' | 'agent' | null;
  assigned_to_id: string | null;
  last_inbound_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

/** Read models of the panel: a conversation with its contact and messages, a contact. */
export class ConversationViews {
  constructor(
    private readonly db: Queryable,
    private readonly workspaceId: string,
  ) {}

  async conversation(conversationId: string) {
    const { rows } = await this.db.query<ConversationViewRow>(
      `select c.id, c.contact_id, k.phone, k.name, c.integration_id, c.channel, c.provider, c.status,
              c.assigned_to_type, c.assigned_to_id, c.last_inbound_at, c.created_at, c.updated_at
         from conversations c join contacts k on k.id = c.contact_id and k.workspace_id = c.workspace_id
        where c.workspace_id = $1 and c.id = $2`,
      [this.workspaceId, conversationId],
    );
    const row = rows[0];
    if (!row) return undefined;
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

  async messages(conversationId: string) {
    const { rows } = await this.db.query(
      `select id, direction, sender_type, sender_name, text, type, status, delivery_status, provider_message_id,
              coalesce(error, delivery_error) as error, created_at, sent_at
         from messages where workspace_id = $1 and conversation_id = $2 order by created_at, id`,
      [this.workspaceId, conversationId],
    );
    return rows.map((row) => ({ ...row, created_at: iso(row.created_at)!, sent_at: iso(row.sent_at) }));
  }

  async contact(contactId: string) {
    const { rows } = await this.db.query<{
      id: string;
      phone: string;
      name: string | null;
      created_at: Date;
    }>('select id, phone, name, created_at from contacts where workspace_id = $1 and id = $2', [
      this.workspaceId,
      contactId,
    ]);
    return rows[0] ? { ...rows[0], created_at: iso(rows[0].created_at)! } : undefined;
  }
}
