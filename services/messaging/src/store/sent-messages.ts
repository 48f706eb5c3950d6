import { eventTypes, type MessageSent, type Provider } from '@inbox/contracts';
import {
  firstOfEach,
  type PreparedEvent,
  prepareEvent,
  type Queryable,
  TurnBatch,
  writeEventsIfChanged,
} from '@inbox/db';

/** A stored message the provider took: what marks it sent and what its `message.sent` says. */
export interface SentMessage {
  workspaceId: string;
  conversationId: string;
  integration: { id: string; provider: Provider };
  messageId: string;
  text: string;
  senderType: 'human' | 'agent' | 'system';
  providerMessageId: string;
  sentAt: string;
}

/** A sent message with its event, made in the caller's trace. */
interface ReadySend {
  message: SentMessage;
  event: PreparedEvent;
}

// Only a message not sent yet changes: two writers may settle one send (its own request, and the
// reconciliation job once the message has been pending long enough); the second changes nothing and
// announces nothing, so a receiver never hears of one send twice. A message failed meanwhile (the job
// found no send recorded while a retry's was about to start) becomes sent: the provider took it.
const markSent = `update messages m
     set status = 'sent', provider_message_id = v.provider_message_id, sent_at = v.sent_at, error = null,
         outcome_unknown_since = null
    from unnest($1::uuid[], $2::uuid[], $3::text[], $4::timestamptz[])
           with ordinality as v(workspace_id, id, provider_message_id, sent_at, n)
   where m.workspace_id = v.workspace_id and m.id = v.id and m.status <> 'sent'
  returning v.n`;

function readySend(message: SentMessage): ReadySend {
  const data: MessageSent = {
    event: eventTypes.messageSent,
    workspace_id: message.workspaceId,
    conversation_id: message.conversationId,
    message: { id: message.messageId, text: message.text, type: 'text' },
    status: { sender_type: message.senderType },
    integration: message.integration,
  };
  return { message, event: prepareEvent(eventTypes.messageSent, data) };
}

/**
 * Marks the messages sent and writes each one's `message.sent`, in one statement (in a transaction, if
 * given one): no transaction to open and close around them.
 */
async function writeSent(db: Queryable, sends: readonly ReadySend[]): Promise<void> {
  // Message ids are uuids: the same one may come in any case, and Postgres answers in lower case.
  const firsts = firstOfEach(sends, (send) => send.message.messageId.toLowerCase());
  await writeEventsIfChanged(
    db,
    firsts.map((send) => send.event),
    {
      text: markSent,
      values: [
        firsts.map((send) => send.message.workspaceId),
        firsts.map((send) => send.message.messageId),
        firsts.map((send) => send.message.providerMessageId),
        firsts.map((send) => send.message.sentAt),
      ],
    },
  );
}

/** Marks one message sent and writes its `message.sent`, inside the caller's transaction. */
export function recordSent(db: Queryable, message: SentMessage): Promise<void> {
  return writeSent(db, [readySend(message)]);
}

/**
 * Sent messages recorded as their requests learn of them: the calls of one turn of the event loop share
 * a statement (TurnBatch), each awaited before its request is answered. A turn brings several answers
 * from the connector under load, and each round trip saved is a statement Postgres no longer binds, runs
 * and commits, and a conversation's sequence row raised once for all of them.
 */
export class SentMessages {
  private readonly batch = new TurnBatch<ReadySend, void>({
    runBatch: async (sends) => {
      await writeSent(this.pool, sends);
      return sends.map(() => undefined);
    },
  });

  constructor(private readonly pool: Queryable) {}

  record(message: SentMessage): Promise<void> {
    // The event is made here, in the caller's trace, and refused here if too large: this caller's alone.
    return this.batch.run(readySend(message));
  }
}
