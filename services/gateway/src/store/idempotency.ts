import type { Pool } from '@inbox/db';

export type IdempotencyClaim =
  | { kind: 'claimed' }
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

/** A record that a new request may take over: expired, or in progress for so long that its holder died. */
const claimable = (table: string) =>
  `(${table}.created_at < now() - interval '24 hours'
     or (${table}.status = 'in_progress' and ${table}.updated_at < now() - interval '2 minutes'))`;

/** Idempotency-Key records, scoped by workspace; a record counts for 24 hours. */
export class IdempotencyStore {
  constructor(private readonly pool: Pool) {}

  /**
   * Claims the key for this request, atomically: a new key, an expired one, or one whose holder died
   * (in progress for over two minutes) becomes ours; otherwise the existing record says what to do.
   */
  async claim(workspaceId: string, key: string, requestHash: string): Promise<IdempotencyClaim> {
    const claimed = await this.pool.query(
      `insert into idempotency_keys (workspace_id, key, request_hash, status) values ($1, $2, $3, 'in_progress')
       on conflict (workspace_id, key) do update
         set request_hash = excluded.request_hash, status = 'in_progress', response_status = null,
             response_body = null, created_at = now(), updated_at = now()
         where ${claimable('idempotency_keys')}
       returning 1`,
      [workspaceId, key, requestHash],
    );
    if (claimed.rowCount === 1) return { kind: 'claimed' };
    const { rows } = await this.pool.query<RecordRow>(
      'select request_hash, status, response_status, response_body from idempotency_keys where workspace_id = $1 and key = $2',
      [workspaceId, key],
    );
    const row = rows[0];
    // Deleted between the two statements (the holder released it): try again as new.
    if (!row) return this.claim(workspaceId, key, requestHash);
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

  async complete(workspaceId: string, key: string, status: number, body: unknown): Promise<void> {
    await this.pool.query(
      `update idempotency_keys set status = 'completed', response_status = $3, response_body = $4, updated_at = now()
       where workspace_id = $1 and key = $2`,
      [workspaceId, key, status, JSON.stringify(body)],
    );
  }

  async release(workspaceId: string, key: string): Promise<void> {
    await this.pool.query('delete from idempotency_keys where workspace_id = $1 and key = $2', [
      workspaceId,
      key,
    ]);
  }

  async deleteExpired(): Promise<number> {
    const { rowCount } = await this.pool.query(
      "delete from idempotency_keys where created_at < now() - interval '24 hours'",
    );
    return rowCount ?? 0;
  }
}

function standing(row: RecordRow, requestHash: string): Exclude<IdempotencyClaim, { kind: 'claimed' }> {
  if (row.request_hash !== requestHash) return { kind: 'mismatch' };
  if (row.status === 'completed')
    return { kind: 'completed', status: row.response_status!, body: row.response_body };
  return { kind: 'in_progress' };
}
