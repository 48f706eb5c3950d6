import { randomUUID } from 'node:crypto';
import type { Pool } from '@inbox/db';

export interface AttemptRecord {
  statusCode: number | null;
  error: string | null;
  durationMs: number;
}

export interface ClaimedDelivery {
  id: string;
  body: string;
}

/** Deliveries and their attempts; every statement names the workspace. */
export class DeliveryStore {
  constructor(private readonly pool: Pool) {}

  /**
   * The delivery of this event to this endpoint, created once and leased to the caller; undefined when
   * it was delivered already or another handler holds the lease.
   */
  async claim(
    input: { workspaceId: string; endpointId: string; eventId: string; eventType: string; body: string },
    leaseMs: number,
  ): Promise<ClaimedDelivery | undefined> {
    await this.pool.query(
      `insert into deliveries (id, workspace_id, endpoint_id, event_id, event_type, body, status)
       values ($1, $2, $3, $4, $5, $6, 'pending') on conflict (endpoint_id, event_id) do nothing`,
      [randomUUID(), input.workspaceId, input.endpointId, input.eventId, input.eventType, input.body],
    );
    const { rows } = await this.pool.query<ClaimedDelivery>(
      `update deliveries set status = 'sending', lease_until = now() + $4 * interval '1 millisecond'
        where workspace_id = $1 and endpoint_id = $2 and event_id = $3 and status <> 'delivered'
          and (status <> 'sending' or lease_until < now())
        returning id, body`,
      [input.workspaceId, input.endpointId, input.eventId, leaseMs],
    );
    return rows[0];
  }

  async recordAttempt(workspaceId: string, deliveryId: string, attempt: AttemptRecord): Promise<void> {
    const delivered = attempt.statusCode !== null && attempt.statusCode >= 200 && attempt.statusCode < 300;
    await this.pool.query(
      `with attempt as (
         insert into attempts (workspace_id, delivery_id, attempt, status_code, error, duration_ms)
         values ($1, $2, (select count(*) + 1 from attempts where workspace_id = $1 and delivery_id = $2), $3, $4, $5)
       )
       update deliveries set status = $6, lease_until = null,
              delivered_at = case when $6 = 'delivered' then now() end
        where workspace_id = $1 and id = $2`,
      [
        workspaceId,
        deliveryId,
        attempt.statusCode,
        attempt.error,
        attempt.durationMs,
        delivered ? 'delivered' : 'failed',
      ],
    );
  }

  async history(workspaceId: string, endpointId: string) {
    const { rows } = await this.pool.query(
      `select d.id, d.event_id, d.event_type, d.status, d.created_at,
              coalesce(json_agg(json_build_object('attempt', a.attempt, 'at', a.at, 'status_code', a.status_code,
                'error', a.error, 'duration_ms', a.duration_ms) order by a.attempt) filter (where a.id is not null), '[]') as attempts
         from deliveries d left join attempts a on a.delivery_id = d.id and a.workspace_id = d.workspace_id
        where d.workspace_id = $1 and d.endpoint_id = $2
        group by d.id order by d.created_at desc limit 100`,
      [workspaceId, endpointId],
    );
    return rows.map((row) => ({
      id: row.id as string,
      event_id: row.event_id as string,
      event_type: row.event_type as string,
      // A lease in progress shows as pending: the attempt has not ended.
      status: (row.status === 'sending' ? 'pending' : row.status) as 'pending' | 'delivered' | 'failed',
      created_at: (row.created_at as Date).toISOString(),
      attempts: (
        row.attempts as Array<{
          attempt: number;
          at: string;
          status_code: number | null;
          error: string | null;
          duration_ms: number;
        }>
      ).map((a) => ({ ...a, at: new Date(a.at).toISOString() })),
    }));
  }
}
