import { type Queryable, TurnBatch } from '@inbox/db';
import { addRepliesIfAllowed, type ReplyOutcome, type ReplyRequest } from './conversations.js';

/**
 * Replies stored as their requests come: the calls of one turn of the event loop share a statement
 * (TurnBatch, addRepliesIfAllowed), each awaited before its provider call. A bus delivers commands in
 * bursts, and each round trip saved is a statement Postgres no longer binds, runs and commits, and a
 * busy conversation's row locked and touched once for all of its replies. A reply that breaks the
 * statement (its idempotency key taken meanwhile) has every call of the batch run again on its own.
 */
export class Replies {
  private readonly batch = new TurnBatch<ReplyRequest, ReplyOutcome>({
    runBatch: (requests) => addRepliesIfAllowed(this.pool, requests),
  });

  constructor(private readonly pool: Queryable) {}

  add(request: ReplyRequest): Promise<ReplyOutcome> {
    return this.batch.run(request);
  }
}
