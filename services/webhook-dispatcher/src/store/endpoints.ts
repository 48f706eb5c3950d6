import { randomUUID } from 'node:crypto';
import { endpointsPerWorkspace, type Webhook } from '@inbox/contracts';
import { inBatches, type Pool, withKeyLock } from '@inbox/db';
import { generateWebhookSecret } from '@inbox/sdk/webhooks';
import type { SecretBox } from '@inbox/service-kit';
import type { z } from 'zod';

/** An endpoint as the admin API shows it. */
export type Endpoint = z.infer<typeof Webhook>;

/** The error recorded on deliveries to an endpoint whose stored secret does not open. */
export const unopenableSecret = 'secret cannot be decrypted';

/** Where a delivery posts, or why it cannot be posted at all. */
export type DeliveryTarget =
  | { usable: true; url: string; secret: string | null; previousSecret: string | null }
  | { usable: false; workspaceId: string; reason: string; cause: unknown };
export type UsableTarget = Extract<DeliveryTarget, { usable: true }>;

interface EndpointRow {
  id: string;
  workspace_id: string;
  url: string;
  events: string[];
  enabled: boolean;
  ordered: boolean;
  max_per_second: number | null;
  secret_sealed: string | null;
  previous_secret_sealed: string | null;
  previous_secret_expires_at: Date | null;
  disabled_reason: string | null;
  failing_since: Date | null;
  created_at: Date;
  updated_at: Date;
}

// A replaced secret past its expiry reads as absent: nothing signs with it or reports it any more.
const unexpired = (column: string, table = '') =>
  `case when ${table}previous_secret_expires_at > now() then ${table}${column} end`;
const columns = `id, workspace_id, url, events, enabled, ordered, max_per_second, secret_sealed,
  ${unexpired('previous_secret_sealed')} as previous_secret_sealed,
  ${unexpired('previous_secret_expires_at')} as previous_secret_expires_at,
  disabled_reason, failing_since, created_at, updated_at`;
/** What a delivery needs of its endpoint, read along with its lease (null when the endpoint is gone). */
export interface TargetColumns {
  endpoint_url: string | null;
  endpoint_secret_sealed: string | null;
  endpoint_previous_secret_sealed: string | null;
}

/** The select list giving TargetColumns from the endpoints row `e`, in the statement that leases. */
export const targetColumns = `e.url as endpoint_url, e.secret_sealed as endpoint_secret_sealed,
  ${unexpired('previous_secret_sealed', 'e.')} as endpoint_previous_secret_sealed`;

// Secrets are sealed to their endpoint: a sealed value copied elsewhere does not open.
const sealContext = (workspaceId: string, id: string) => `endpoints:${workspaceId}:${id}`;
const toEndpoint = (row: EndpointRow): Endpoint => ({
  id: row.id,
  url: row.url,
  events: row.events,
  enabled: row.enabled,
  ordered: row.ordered,
  max_per_second: row.max_per_second,
  has_secret: row.secret_sealed !== null,
  previous_secret_expires_at: row.previous_secret_expires_at?.toISOString() ?? null,
  disabled_reason: row.disabled_reason,
  failing_since: row.failing_since?.toISOString() ?? null,
  created_at: row.created_at.toISOString(),
  updated_at: row.updated_at.toISOString(),
});

/** Webhook endpoints of a workspace; every query names the workspace. */
export class EndpointStore {
  constructor(
    private readonly pool: Pool,
    private readonly secrets: SecretBox,
  ) {}

  /** The new endpoint, or undefined when the workspace has `endpointsPerWorkspace` already. */
  async create(
    workspaceId: string,
    input: {
      url: string;
      events: string[];
      secret?: string | null;
      ordered?: boolean | null;
      max_per_second?: number | null;
    },
  ): Promise<Endpoint | undefined> {
    const id = randomUUID();
    // Under the workspace's lock: creations at once count each other's rows, and the limit holds.
    const { rows } = await withKeyLock(this.pool, `endpoints:${workspaceId}`, (client) =>
      client.query<EndpointRow>(
        `insert into endpoints (id, workspace_id, url, events, secret_sealed, ordered, max_per_second)
       select $1, $2, $3, $4, $5, $6, $7
        where (select count(*) from endpoints where workspace_id = $2) < $8
       returning ${columns}`,
        [
          id,
          workspaceId,
          input.url,
          input.events,
          input.secret ? this.secrets.seal(input.secret, sealContext(workspaceId, id)) : null,
          input.ordered ?? false,
          input.max_per_second ?? null,
          endpointsPerWorkspace,
        ],
      ),
    );
    return rows[0] && toEndpoint(rows[0]);
  }

  async get(workspaceId: string, id: string): Promise<Endpoint | undefined> {
    const { rows } = await this.pool.query<EndpointRow>(
      `select ${columns} from endpoints where workspace_id = $1 and id = $2`,
      [workspaceId, id],
    );
    return rows[0] ? toEndpoint(rows[0]) : undefined;
  }

  async list(workspaceId: string): Promise<Endpoint[]> {
    const { rows } = await this.pool.query<EndpointRow>(
      `select ${columns} from endpoints where workspace_id = $1 order by created_at, id`,
      [workspaceId],
    );
    return rows.map(toEndpoint);
  }

  /** Changes what is given; enabling clears the failure record so the endpoint starts afresh. */
  async update(
    workspaceId: string,
    id: string,
    changes: {
      url?: string;
      events?: string[];
      enabled?: boolean;
      ordered?: boolean;
      max_per_second?: number | null;
    },
  ): Promise<Endpoint | undefined> {
    const { rows } = await this.pool.query<EndpointRow>(
      `update endpoints set url = coalesce($3, url), events = coalesce($4, events), ordered = coalesce($6, ordered),
              enabled = coalesce($5, enabled),
              disabled_reason = case when $5 is null then disabled_reason when $5 then null else 'disabled by an operator' end,
              failing_since = case when $5 then null else failing_since end,
              max_per_second = case when $7::boolean then $8::int else max_per_second end,
              updated_at = now()
        where workspace_id = $1 and id = $2 returning ${columns}`,
      [
        workspaceId,
        id,
        changes.url ?? null,
        changes.events ?? null,
        changes.enabled ?? null,
        changes.ordered ?? null,
        changes.max_per_second !== undefined,
        changes.max_per_second ?? null,
      ],
    );
    return rows[0] ? toEndpoint(rows[0]) : undefined;
  }

  /**
   * Removes the endpoint with its deliveries and their attempts: disabled first, so that no event is
   * scheduled for it meanwhile, then its deliveries a few hundred a statement, then the endpoint. One
   * statement cascading over a month of a busy endpoint's deliveries ran for many seconds (past the
   * statement timeout, and the endpoint could not be removed at all), holding every outbox relay's fence
   * and, through the rows it locked, every workspace's scheduling that met them. Stopped part-way, the
   * endpoint stays, disabled, with the rest of its deliveries; removing it again finishes.
   */
  async remove(workspaceId: string, id: string, deliveriesPerStatement = 500): Promise<boolean> {
    const disabled = await this.pool.query(
      'update endpoints set enabled = false where workspace_id = $1 and id = $2',
      [workspaceId, id],
    );
    if (disabled.rowCount !== 1) return false;
    await inBatches(async (size) => {
      const { rowCount } = await this.pool.query(
        `delete from deliveries where id = any(array(
           select id from deliveries where workspace_id = $1 and endpoint_id = $2 limit $3))`,
        [workspaceId, id, size],
      );
      return rowCount ?? 0;
    }, deliveriesPerStatement);
    const { rowCount } = await this.pool.query('delete from endpoints where workspace_id = $1 and id = $2', [
      workspaceId,
      id,
    ]);
    return rowCount === 1;
  }

  /**
   * Replaces the signing secret (a given one, or a new random one) and returns it once. The replaced
   * secret keeps signing alongside it for `graceMs`, so receivers can move over without losing
   * deliveries; a second rotation within that time drops the oldest one.
   */
  async rotateSecret(
    workspaceId: string,
    id: string,
    secret: string | null | undefined,
    graceMs: number,
  ): Promise<{ secret: string; previous_secret_expires_at: string | null } | undefined> {
    const next = secret ?? generateWebhookSecret();
    // Both secrets are sealed to the same endpoint, so the sealed value moves over as it is.
    const { rows } = await this.pool.query<{ previous_secret_expires_at: Date | null }>(
      `update endpoints set secret_sealed = $3, updated_at = now(),
              previous_secret_sealed = case when $4 > 0 then secret_sealed end,
              previous_secret_expires_at = case when $4 > 0 and secret_sealed is not null
                then now() + $4 * interval '1 millisecond' end
        where workspace_id = $1 and id = $2 returning previous_secret_expires_at`,
      [workspaceId, id, this.secrets.seal(next, sealContext(workspaceId, id)), graceMs],
    );
    if (!rows[0]) return undefined;
    return {
      secret: next,
      previous_secret_expires_at: rows[0].previous_secret_expires_at?.toISOString() ?? null,
    };
  }

  /**
   * Where a leased delivery posts, from its endpoint's columns the lease read along (undefined when the
   * endpoint is gone). A secret that does not open (a corrupted row, a changed ENCRYPTION_KEY) makes only
   * its own endpoint unusable: the others' deliveries go on, and nothing is ever sent unsigned in its place.
   */
  targetOf(
    delivery: { endpoint_id: string; workspace_id: string } & TargetColumns,
  ): DeliveryTarget | undefined {
    if (delivery.endpoint_url === null) return undefined;
    return this.target({
      id: delivery.endpoint_id,
      workspace_id: delivery.workspace_id,
      url: delivery.endpoint_url,
      secret_sealed: delivery.endpoint_secret_sealed,
      previous_secret_sealed: delivery.endpoint_previous_secret_sealed,
    });
  }

  private target(
    row: Pick<EndpointRow, 'id' | 'workspace_id' | 'url' | 'secret_sealed' | 'previous_secret_sealed'>,
  ): DeliveryTarget {
    if (!row.secret_sealed) return { usable: true, url: row.url, secret: null, previousSecret: null };
    const context = sealContext(row.workspace_id, row.id);
    try {
      const secret = this.secrets.open(row.secret_sealed, context);
      const previousSecret = row.previous_secret_sealed
        ? this.secrets.open(row.previous_secret_sealed, context)
        : null;
      return { usable: true, url: row.url, secret, previousSecret };
    } catch (error) {
      return { usable: false, workspaceId: row.workspace_id, reason: unopenableSecret, cause: error };
    }
  }
}
