import { randomUUID } from 'node:crypto';
import type { Integration, Provider } from '@inbox/contracts';
import type { Queryable } from '@inbox/db';
import {
  type Assignee,
  conversationStatuses,
  statusAfterAssignment,
  statusAfterNewMessage,
} from '../domain/conversation-state.js';
import { otherStoredForm, twinLine } from '../domain/phone.js';

export interface ContactRow {
  id: string;
  /** Null for contacts of channels without phone numbers, keyed by the provider's user id instead. */
  phone: string | null;
  name: string | null;
}

export interface ConversationRow {
  id: string;
  contact_id: string;
  integration_id: string;
  status: 'open' | 'assigned' | 'resolved';
  assigned_to_type: 'human' | 'agent' | null;
  assigned_to_id: string | null;
}

/**
 * The reply rules as a statement applies them: providers that take no reply from this sender, and
 * providers that take one only inside the window, which is open for a contact who wrote after
 * `windowOpenAfter`.
 */
export interface ReplyAllowance {
  refusingProviders: readonly string[];
  windowedProviders: readonly string[];
  windowOpenAfter: Date;
}

export interface SendRecipient {
  provider: Provider;
  phone: string | null;
  provider_user_id: string | null;
  /** When the contact last wrote in the conversation: where a channel's window starts. */
  last_inbound_at: Date | null;
}

/**
 * Contacts and conversations of one workspace; every statement names the workspace. What says "locked
 * for this transaction" needs a transaction's client; the rest works on the pool too.
 */
export class ConversationStore {
  constructor(
    private readonly client: Queryable,
    private readonly workspaceId: string,
  ) {}

  /**
   * The phone a number's contact is stored under in this workspace: its canonical form, or the other form
   * the same line may be stored under (`otherStoredForm`: a Brazilian mobile without its nine or a Mexican
   * one with its 1, as a callback named it before canonicalPhone; an Argentine number's twin with or
   * without its 9), so that contact goes on taking its customer's messages and the API's sends; the form
   * asked for when both are stored. No round trip for a number with no other form.
   */
  async storedPhone(canonical: string): Promise<string> {
    const other = otherStoredForm(canonical);
    if (!other) return canonical;
    const { rows } = await this.client.query<{ phone: string }>(
      'select phone from contacts where workspace_id = $1 and phone in ($2, $3) order by phone = $2 desc limit 1',
      [this.workspaceId, canonical, other],
    );
    return rows[0]?.phone ?? canonical;
  }

  /**
   * storedPhone, for a transaction that goes on to create the contact when it is missing: a number with a
   * twin form (`twinLine`, an Argentine one) has its line locked for the transaction first, so that of two
   * first messages racing in the two forms, the second looks the contact up after the first committed it,
   * and both are one contact. Needs a transaction's client.
   */
  async lockedStoredPhone(canonical: string): Promise<string> {
    const line = twinLine(canonical);
    if (line)
      await this.client.query('select pg_advisory_xact_lock(hashtextextended($1, 0))', [
        `contact-line:${this.workspaceId}:${line}`,
      ]);
    return this.storedPhone(canonical);
  }

  /**
   * The contact of this phone, created when missing. A name given by the API replaces the stored one;
   * a name from the provider (the contact's profile) only fills an empty one.
   */
  async upsertContact(
    phone: string,
    name: string | null | undefined,
    { onlyIfEmpty = false }: { onlyIfEmpty?: boolean } = {},
  ): Promise<{ contact: ContactRow; created: boolean }> {
    const inserted = await this.client.query<ContactRow>(
      `insert into contacts (id, workspace_id, phone, name) values ($1, $2, $3, $4)
       on conflict (workspace_id, phone) do nothing returning id, phone, name`,
      [randomUUID(), this.workspaceId, phone, name ?? null],
    );
    if (inserted.rows[0]) return { contact: inserted.rows[0], created: true };
    const { rows } = await this.client.query<ContactRow>(
      `update contacts set name = case when $4 then coalesce(name, $3) else coalesce($3, name) end, updated_at = now()
       where workspace_id = $1 and phone = $2 returning id, phone, name`,
      [this.workspaceId, phone, name ?? null, onlyIfEmpty],
    );
    return { contact: rows[0]!, created: false };
  }

  /**
   * The contact a channel without phone numbers knows by its own user id (the bot channel's Telegram
   * user), created when missing; the provider's name only fills an empty one, as for phone contacts. An
   * id noted on a contact known by number (`noteUserId`: a WhatsApp customer who hid their number) names
   * that contact.
   */
  async upsertUserContact(
    channel: string,
    userId: string,
    name: string | null,
  ): Promise<{ contact: ContactRow; created: boolean }> {
    const inserted = await this.client.query<ContactRow>(
      `insert into contacts (id, workspace_id, provider_channel, provider_user_id, name)
       select $1, $2, $3, $4, $5
        where not exists (select 1 from contact_user_ids where workspace_id = $2 and channel = $3 and user_id = $4)
       on conflict (workspace_id, provider_channel, provider_user_id) where provider_user_id is not null do nothing
       returning id, phone, name`,
      [randomUUID(), this.workspaceId, channel, userId, name],
    );
    if (inserted.rows[0]) return { contact: inserted.rows[0], created: true };
    const { rows } = await this.client.query<ContactRow>(
      `update contacts set name = coalesce(name, $4), updated_at = now()
        where workspace_id = $1 and id = coalesce(
          (select contact_id from contact_user_ids where workspace_id = $1 and channel = $2 and user_id = $3),
          (select id from contacts where workspace_id = $1 and provider_channel = $2 and provider_user_id = $3))
        returning id, phone, name`,
      [this.workspaceId, channel, userId, name],
    );
    return { contact: rows[0]!, created: false };
  }

  /**
   * Notes a channel's other id of a contact known by number (migration 013), unless a contact has it noted
   * already: the first keeps it. A message naming the customer by that id alone then comes to this contact,
   * though one was made for the id before (its conversation stays as it was).
   */
  async noteUserId(contactId: string, channel: string, userId: string): Promise<void> {
    await this.client.query(
      `insert into contact_user_ids (workspace_id, channel, user_id, contact_id) values ($1, $2, $3, $4)
       on conflict (workspace_id, channel, user_id) do nothing`,
      [this.workspaceId, channel, userId, contactId],
    );
  }

  /** The contact's conversation on this integration, created when missing and locked for this transaction. */
  async openConversation(
    contactId: string,
    integration: Pick<Integration, 'id' | 'channel' | 'provider'>,
  ): Promise<{ conversation: ConversationRow; created: boolean }> {
    const columns = 'id, contact_id, integration_id, status, assigned_to_type, assigned_to_id';
    const inserted = await this.client.query<ConversationRow>(
      `insert into conversations (id, workspace_id, contact_id, integration_id, channel, provider)
       values ($1, $2, $3, $4, $5, $6) on conflict (workspace_id, contact_id, integration_id) do nothing
       returning ${columns}`,
      [randomUUID(), this.workspaceId, contactId, integration.id, integration.channel, integration.provider],
    );
    if (inserted.rows[0]) return { conversation: inserted.rows[0], created: true };
    const { rows } = await this.client.query<ConversationRow>(
      `select ${columns} from conversations where workspace_id = $1 and contact_id = $2 and integration_id = $3 for update`,
      [this.workspaceId, contactId, integration.id],
    );
    return { conversation: rows[0]!, created: false };
  }

  /**
   * What a send to a phone writes, in one statement: the contact found or created (a name given replaces
   * the stored one), its conversation on the integration found or created, reopened as
   * `statusAfterNewMessage` says and touched, and the message stored pending. The same as upsertContact,
   * openConversation, reopen and addOutboundMessage in a transaction, without holding the conversation's
   * lock across their round trips. Whether each row was created is told by `xmax = 0` (a row an upsert
   * inserted has no updating transaction).
   */
  async addOutboundToPhone(
    phone: string,
    name: string | null | undefined,
    integration: Pick<Integration, 'id' | 'channel' | 'provider'>,
    message: { text: string; senderType: 'human' | 'agent' | 'system'; idempotencyKey?: string | undefined },
  ): Promise<{
    contact: { contact: ContactRow; created: boolean };
    conversation: { conversation: ConversationRow; created: boolean };
    messageId: string;
  }> {
    const messageId = randomUUID();
    const { rows } = await this.client.query<
      ContactRow &
        Omit<ConversationRow, 'id'> & {
          conversation_id: string;
          contact_created: boolean;
          conversation_created: boolean;
        }
    >(
      `with contact as (
         insert into contacts (id, workspace_id, phone, name) values ($1, $2, $3, $4)
         on conflict (workspace_id, phone) do update set name = coalesce(excluded.name, contacts.name), updated_at = now()
         returning id, phone, name, xmax = 0 as created),
       conversation as (
         insert into conversations (id, workspace_id, contact_id, integration_id, channel, provider)
         select $5, $2, contact.id, $6, $7, $8 from contact
         on conflict (workspace_id, contact_id, integration_id) do update
           set status = coalesce($9::jsonb ->> (conversations.status || ':' || (conversations.assigned_to_type is not null)::text), conversations.status),
               updated_at = now()
         returning id, contact_id, integration_id, status, assigned_to_type, assigned_to_id, xmax = 0 as created),
       message as (
         insert into messages (id, workspace_id, conversation_id, direction, sender_type, text, type, status, idempotency_key, first_answer)
         select $10, $2, conversation.id, 'outbound', $11, $12, 'text', 'pending', $13,
                jsonb_build_object('contactCreated', contact.created, 'conversationCreated', conversation.created)
           from conversation, contact)
       select contact.id, contact.phone, contact.name, contact.created as contact_created,
              conversation.id as conversation_id, conversation.contact_id, conversation.integration_id, conversation.status,
              conversation.assigned_to_type, conversation.assigned_to_id, conversation.created as conversation_created
         from contact, conversation`,
      [
        randomUUID(),
        this.workspaceId,
        phone,
        name ?? null,
        randomUUID(),
        integration.id,
        integration.channel,
        integration.provider,
        reopenings,
        messageId,
        message.senderType,
        message.text,
        message.idempotencyKey ?? null,
      ],
    );
    const row = rows[0]!;
    return {
      contact: { contact: { id: row.id, phone: row.phone, name: row.name }, created: row.contact_created },
      conversation: {
        conversation: {
          id: row.conversation_id,
          contact_id: row.contact_id,
          integration_id: row.integration_id,
          status: row.status,
          assigned_to_type: row.assigned_to_type,
          assigned_to_id: row.assigned_to_id,
        },
        created: row.conversation_created,
      },
      messageId,
    };
  }

  /** A message into a resolved conversation reopens it (assigned when it has an assignee, else open). */
  async reopen(conversation: ConversationRow): Promise<void> {
    const status = statusAfterNewMessage(conversation.status, conversation.assigned_to_type !== null);
    if (status === conversation.status) return;
    await this.client.query(
      'update conversations set status = $3, updated_at = now() where workspace_id = $1 and id = $2',
      [this.workspaceId, conversation.id, status],
    );
  }

  /** The conversation, locked for this transaction; undefined when it is not this workspace's. */
  async lock(conversationId: string): Promise<ConversationRow | undefined> {
    const { rows } = await this.client.query<ConversationRow>(
      `select id, contact_id, integration_id, status, assigned_to_type, assigned_to_id
         from conversations where workspace_id = $1 and id = $2 for update`,
      [this.workspaceId, conversationId],
    );
    return rows[0];
  }

  async setAssignment(conversation: ConversationRow, assignee: Assignee): Promise<void> {
    await this.client.query(
      `update conversations set assigned_to_type = $3, assigned_to_id = $4, status = $5, updated_at = now()
        where workspace_id = $1 and id = $2`,
      [
        this.workspaceId,
        conversation.id,
        assignee?.type ?? null,
        assignee?.id ?? null,
        statusAfterAssignment(conversation.status, assignee),
      ],
    );
  }

  async setResolved(conversationId: string): Promise<void> {
    await this.client.query(
      `update conversations set status = 'resolved', updated_at = now() where workspace_id = $1 and id = $2`,
      [this.workspaceId, conversationId],
    );
  }

  async addOutboundMessage(input: {
    conversationId: string;
    text: string;
    senderType: 'human' | 'agent' | 'system';
    senderName?: string | null;
    idempotencyKey?: string;
    firstAnswer?: Record<string, unknown>;
  }): Promise<string> {
    const id = randomUUID();
    // A reply is activity too (the inbox lists conversations by their latest): touched in the same statement.
    await this.client.query(
      `with touched as (update conversations set updated_at = now() where workspace_id = $2 and id = $3)
       insert into messages (id, workspace_id, conversation_id, direction, sender_type, sender_name, text, type, status, idempotency_key, first_answer)
       values ($1, $2, $3, 'outbound', $4, $5, $6, 'text', 'pending', $7, $8)`,
      [
        id,
        this.workspaceId,
        input.conversationId,
        input.senderType,
        input.senderName ?? null,
        input.text,
        input.idempotencyKey ?? null,
        input.firstAnswer ?? null,
      ],
    );
    return id;
  }

  /**
   * The conversation with its contact's phone (or, without one, the provider's user id), locked for this
   * transaction; undefined in another workspace.
   */
  async conversationForSend(conversationId: string): Promise<(ConversationRow & SendRecipient) | undefined> {
    const { rows } = await this.client.query<ConversationRow & SendRecipient>(
      `select c.id, c.contact_id, c.integration_id, c.status, c.assigned_to_type, c.assigned_to_id, c.provider,
              c.last_inbound_at, k.phone, k.provider_user_id
         from conversations c join contacts k on k.id = c.contact_id and k.workspace_id = c.workspace_id
        where c.workspace_id = $1 and c.id = $2 for update of c`,
      [this.workspaceId, conversationId],
    );
    return rows[0];
  }

  /** Stores an inbound message once per provider id; undefined when it was stored before. */
  async addInboundMessage(input: {
    conversationId: string;
    providerMessageId: string;
    text: string;
    type: string;
    sentAt: string;
  }): Promise<string | undefined> {
    const id = randomUUID();
    const { rowCount } = await this.client.query(
      `insert into messages (id, workspace_id, conversation_id, direction, sender_type, text, type, status, provider_message_id, sent_at)
       values ($1, $2, $3, 'inbound', 'contact', $4, $5, 'received', $6, $7)
       on conflict (conversation_id, provider_message_id) where direction = 'inbound' do nothing`,
      [
        id,
        this.workspaceId,
        input.conversationId,
        input.text,
        input.type,
        input.providerMessageId,
        input.sentAt,
      ],
    );
    if (rowCount !== 1) return undefined;
    // The window runs from the contact's message, never from a clock ahead of ours.
    await this.client.query(
      `update conversations set last_inbound_at = greatest(coalesce(last_inbound_at, '-infinity'), least($3::timestamptz, now())),
              updated_at = now()
        where workspace_id = $1 and id = $2`,
      [this.workspaceId, input.conversationId, input.sentAt],
    );
    return id;
  }

  /**
   * A message whose send the provider refused, pending again for a retry of the same request. Pending
   * from now: the reconciliation job leaves it alone as long as a new message's send.
   */
  async retryFailed(messageId: string): Promise<void> {
    await this.client.query(
      `update messages set status = 'pending', error = null, pending_since = now()
        where workspace_id = $1 and id = $2 and status = 'failed'`,
      [this.workspaceId, messageId],
    );
  }

  /** Leaves a pending message pending, saying why its outcome is not known; the job does not ask again. */
  async markOutcomeUnknown(messageId: string, reason: string): Promise<void> {
    await this.client.query(
      `update messages set error = $3, outcome_unknown_since = now()
        where workspace_id = $1 and id = $2 and status = 'pending'`,
      [this.workspaceId, messageId, reason],
    );
  }

  async markFailed(messageId: string, error: string): Promise<void> {
    await this.client.query(
      `update messages set status = 'failed', error = $3 where workspace_id = $1 and id = $2`,
      [this.workspaceId, messageId, error],
    );
  }
}

/** A reply to store where the rules allow it: into the conversation of the workspace named. */
export interface ReplyRequest {
  workspaceId: string;
  conversationId: string;
  rules: ReplyAllowance;
  text: string;
  senderType: 'human' | 'agent' | 'system';
  senderName?: string | null;
  idempotencyKey?: string;
}

/** The conversation as read, with the new message's id; undefined where the workspace has no such one. */
export type ReplyOutcome =
  | { conversation: ConversationRow & SendRecipient; messageId: string | undefined }
  | undefined;

/**
 * Replies read, checked and stored in one statement: each conversation read with its contact and locked
 * (in the order of their ids, so two such statements never wait on each other in a cycle), the reply
 * rules applied to what was read, and, for the conversations with a reply the rules allow, the
 * conversation reopened and touched once and those replies stored pending, in the order given. What a
 * locked read, reopen and insert do in a transaction, without holding a conversation's lock across round
 * trips, and in one round trip for as many replies as there are.
 *
 * Answers, for each request in its order, the conversation as read under its lock (undefined where the
 * workspace has no such one) and the new message's id, undefined when the rules refused the reply: the
 * caller finds why on the conversation.
 */
export async function addRepliesIfAllowed(
  db: Queryable,
  requests: readonly ReplyRequest[],
): Promise<ReplyOutcome[]> {
  const ids = requests.map(() => randomUUID());
  const column = <K>(pick: (request: ReplyRequest) => K) => requests.map(pick);
  const { rows } = await db.query<
    ConversationRow & SendRecipient & { n: string; found: boolean; stored: boolean }
  >(
    `with v as (
       select * from unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::text[], $5::text[], $6::text[], $7::text[],
                            $8::text[], $9::text[], $10::timestamptz[])
         with ordinality as v(id, workspace_id, conversation_id, sender_type, sender_name, text, idempotency_key,
                              refusing, windowed, window_open_after, n)),
     c as (
       select c.id, c.workspace_id, c.contact_id, c.integration_id, c.status, c.assigned_to_type, c.assigned_to_id,
              c.provider, c.last_inbound_at, k.phone, k.provider_user_id
         from conversations c join contacts k on k.id = c.contact_id and k.workspace_id = c.workspace_id
        where (c.workspace_id, c.id) in (select workspace_id, conversation_id from v)
        order by c.id
          for no key update of c),
     allowed as (
       select v.* from v join c on c.workspace_id = v.workspace_id and c.id = v.conversation_id
        where c.provider <> all(string_to_array(v.refusing, ','))
          and (c.provider <> all(string_to_array(v.windowed, ',')) or c.last_inbound_at > v.window_open_after)),
     touched as (
       update conversations u
          set status = $11::jsonb ->> (c.status || ':' || (c.assigned_to_type is not null)::text), updated_at = now()
         from c
        where u.workspace_id = c.workspace_id and u.id = c.id
          and exists (select from allowed a where a.workspace_id = c.workspace_id and a.conversation_id = c.id)
       returning u.workspace_id, u.id),
     inserted as (
       -- Each its own time, in the order given: one statement's now() would tie them in the conversation.
       insert into messages (id, workspace_id, conversation_id, direction, sender_type, sender_name, text, type,
                             status, idempotency_key, created_at)
       select a.id, a.workspace_id, a.conversation_id, 'outbound', a.sender_type, a.sender_name, a.text, 'text',
              'pending', a.idempotency_key, clock_timestamp()
         from allowed a join touched t on t.workspace_id = a.workspace_id and t.id = a.conversation_id
        order by a.n
       returning id)
     select v.n, c.id is not null as found, v.id in (select id from inserted) as stored, c.id, c.contact_id,
            c.integration_id, c.status, c.assigned_to_type, c.assigned_to_id, c.provider, c.last_inbound_at,
            c.phone, c.provider_user_id
       from v left join c on c.workspace_id = v.workspace_id and c.id = v.conversation_id`,
    [
      ids,
      column((r) => r.workspaceId),
      column((r) => r.conversationId),
      column((r) => r.senderType),
      column((r) => r.senderName ?? null),
      column((r) => r.text),
      column((r) => r.idempotencyKey ?? null),
      column((r) => r.rules.refusingProviders.join(',')),
      column((r) => r.rules.windowedProviders.join(',')),
      column((r) => r.rules.windowOpenAfter),
      reopenings,
    ],
  );
  const outcomes: ReplyOutcome[] = requests.map(() => undefined);
  for (const { n, found, stored, ...conversation } of rows) {
    const index = Number(n) - 1;
    if (found) outcomes[index] = { conversation, messageId: stored ? ids[index] : undefined };
  }
  return outcomes;
}

/**
 * statusAfterNewMessage for every status, with and without an assignee, keyed `status:assigned` for a
 * statement to look up: the rule stays declared once, in the domain.
 */
const reopenings = JSON.stringify(
  Object.fromEntries(
    conversationStatuses.flatMap((status) =>
      [false, true].map((assigned) => [`${status}:${assigned}`, statusAfterNewMessage(status, assigned)]),
    ),
  ),
);
