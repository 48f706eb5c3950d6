import { randomUUID } from 'node:crypto';
import type { Pool } from '@inbox/db';

export interface AttemptRecord {
  statusCode: number | null;
  error: string | null;
  durationMs: number;
}

export class DeliveryStore {
  constructor(private readonly pool: Pool) {}

  /** The delivery of this event to this endpoint, created once; `created` is false on a redelivered event. */
  async open(input: {
    workspaceId: string;
    endpointId: string;
    eventId: string;
    eventType: string;
    body: string;
  }): Promise<{ id: string; status: string; body: string }> {
    const inserted = await this.pool.query<{ id: string; status: string; body: string }>(
      `insert into deliveries (id, workspace_id, endpoint_id, event_id, event_type, body, status)
       values ($1, $2, $3, $4, $5, $6, 'pending') on conflict (endpoint_id, event_id) do nothing
       returning id, status, body`,
      [randomUUID(), input.workspaceId, input.endpointId, input.eventId, input.eventType, input.body],
    );
    if (inserted.rows[0]) return inserted.rows[0];
    const { rows } = await this.pool.query<{ id: string; status: string; body: string }>(
      'select id, status, body from deliveries where endpoint_id = $1 and event_id = $2',
      [input.endpointId, input.eventId],
    );
    return rows[0]!;
  }

  async recordAttempt(deliveryId: string, attempt: AttemptRecord): Promise<void> {
    const delivered = attempt.statusCode !== null && attempt.statusCode >= 200 && attempt.statusCode < 300;
    await this.pool.query(
      `with attempt as (
         insert into attempts (delivery_id, attempt, status_code, error, duration_ms)
         values ($1, (select count(*) + 1 from attempts where delivery_id = $1), $2, $3, $4)
       )
       update deliveries set status = $5, delivered_at = case when $5 = 'delivered' then now() end where id = $1`,
      [deliveryId, attempt.statusCode, attempt.error, attempt.durationMs, delivered ? 'delivered' : 'failed'],
    );
  }

  async history(workspaceId: string, endpointId: string) {
    const { rows } = await this.pool.query(
      `select d.id, d.event_id, d.event_type, d.status, d.created_at,
              coalesce(json_agg(json_build_object('attempt', a.attempt, 'at', a.at, 'status_code', a.status_code,
                'error', a.error, 'duration_ms', a.duration_ms) order by a.attempt) filter (where a.id is not null), '[]') as attempts
         from deliveries d left join attempts a on a.delivery_id = d.id
        where d.workspace_id = $1 and d.endpoint_id = $2
        group by d.id order by d.created_at desc limit 100`,
      [workspaceId, endpointId],
    );
    return rows.map((row) => ({
      id: row.id as string,
      event_id: row.event_id as string,
      event_type: row.event_type as string,
      status: row.status as 'pending' | 'delivered' | 'failed',
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
