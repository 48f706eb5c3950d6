import { randomUUID } from 'node:crypto';
import { inBatches, type Pool } from '@inbox/db';

export type IdempotencyClaim =
  /** `holder` names this claim: renewing, recording and releasing the key need it. */
  | { kind: 'claimed'; holder: string }
  | { kind: 'mismatch' }
  | { kind: 'completed'; status: number; body: unknown }
  | { kind: 'in_progress' };

/** What a waiting request sees of a key another request holds; `claimable`: try to claim it again. */
export type IdempotencyState = Exclude<IdempotencyClaim, { kind: 'claimed' }> | { kind: 'claimable' };

interface RecordRow {
  request_hash: string;
  status: string;
  response_status: number | null;
  response_body: unknown;
}

/** A record that a new request may take over: expired, or in progress under a lease its holder let lapse. */
const claimable = (table: string) =>
  `(${table}.created_at < now() - interval '24 hours'
     or (${table}.status = 'in_progress' and ${table}.lease_until < now()))`;
/** The lease is counted on the database's clock, the one the claim query compares it with. */
const leaseUntil = (param: string) => `now() + ${param} * interval '1 millisecond'`;

/** Idempotency-Key records, scoped by workspace; a record counts for 24 hours. */
export class IdempotencyStore {
  constructor(private readonly pool: Pool) {}

  /**
   * Claims the key for this request under a lease of `leaseMs`, atomically: a new key, an expired one,
   * or one whose holder let its lease lapse (died) becomes ours; otherwise the existing record says what
   * to do.
   */
  async claim(
    workspaceId: string,
    key: string,
    requestHash: string,
    leaseMs: number,
  ): Promise<IdempotencyClaim> {
    const holder = randomUUID();
    const claimed = await this.pool.query(
      `insert into idempotency_keys (workspace_id, key, request_hash, status, holder, lease_until)
       values ($1, $2, $3, 'in_progress', $4, ${leaseUntil('$5')})
       on conflict (workspace_id, key) do update
         set request_hash = excluded.request_hash, status = 'in_progress', response_status = null,
             response_body = null, created_at = now(), updated_at = now(), holder = excluded.holder,
             lease_until = excluded.lease_until
         where ${claimable('idempotency_keys')}
       returning 1`,
      [workspaceId, key, requestHash, holder, leaseMs],
    );
    if (claimed.rowCount === 1) return { kind: 'claimed', holder };
    const { rows } = await this.pool.query<RecordRow>(
      'select request_hash, status, response_status, response_body from idempotency_keys where workspace_id = $1 and key = $2',
      [workspaceId, key],
    );
    const row = rows[0];
    // Deleted between the two statements (the holder released it): try again as new.
    if (!row) return this.claim(workspaceId, key, requestHash, leaseMs);
    return standing(row, requestHash);
  }

  /** One read, for a request waiting on the key's holder; it never writes. */
  async peek(workspaceId: string, key: string, requestHash: string): Promise<IdempotencyState> {
    const { rows } = await this.pool.query<RecordRow & { claimable: boolean }>(
      `select request_hash, status, response_status, response_body, ${claimable('k')} as claimable
         from idempotency_keys k where workspace_id = $1 and key = $2`,
      [workspaceId, key],
    );
    const row = rows[0];
    // Gone: the holder failed and released it.
    if (!row || row.claimable) return { kind: 'claimable' };
    return standing(row, requestHash);
  }

  /** Extends the holder's lease by `leaseMs` from now; false when the key is no longer this holder's. */
  async renew(workspaceId: string, key: string, holder: string, leaseMs: number): Promise<boolean> {
    const { rowCount } = await this.pool.query(
      `update idempotency_keys set lease_until = ${leaseUntil('$4')}
       where workspace_id = $1 and key = $2 and holder = $3 and status = 'in_progress'`,
      [workspaceId, key, holder, leaseMs],
    );
    return rowCount === 1;
  }

  async complete(
    workspaceId: string,
    key: string,
    holder: string,
    status: number,
    body: unknown,
  ): Promise<void> {
    await this.pool.query(
      `update idempotency_keys set status = 'completed', response_status = $4, response_body = $5, updated_at = now()
       where workspace_id = $1 and key = $2 and holder = $3`,
      [workspaceId, key, holder, status, JSON.stringify(body)],
    );
  }

  async release(workspaceId: string, key: string, holder: string): Promise<void> {
    await this.pool.query(
      'delete from idempotency_keys where workspace_id = $1 and key = $2 and holder = $3',
      [workspaceId, key, holder],
    );
  }

  /**
   * Deletes the records older than 24 hours, `batchSize` a statement: external send has no rate limit, and
   * a day's keys in one delete could outlast the statement timeout, roll back every time, and leave the
   * table to grow.
   */
  deleteExpired(batchSize = 1_000): Promise<number> {
    return inBatches(async (size) => {
      const { rowCount } = await this.pool.query(
        `delete from idempotency_keys where (workspace_id, key) in (
           select workspace_id, key from idempotency_keys where created_at < now() - interval '24 hours'
            limit $1 for update skip locked)`,
        [size],
      );
      return rowCount ?? 0;
    }, batchSize);
  }
}

function standing(row: RecordRow, requestHash: string): Exclude<IdempotencyClaim, { kind: 'claimed' }> {
  if (row.request_hash !== requestHash) return { kind: 'mismatch' };
  if (row.status === 'completed')
    return { kind: 'completed', status: row.response_status!, body: row.response_body };
  return { kind: 'in_progress' };
}
