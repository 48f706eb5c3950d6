import { randomUUID } from 'node:crypto';
import type { Pool } from '@inbox/db';
import type { SecretBox } from '@inbox/service-kit';

export interface Endpoint {
  id: string;
  url: string;
  events: string[];
  enabled: boolean;
  has_secret: boolean;
  created_at: string;
}

interface EndpointRow {
  id: string;
  workspace_id: string;
  url: string;
  events: string[];
  enabled: boolean;
  secret_sealed: string | null;
  created_at: Date;
}

const columns = 'id, workspace_id, url, events, enabled, secret_sealed, created_at';
// Secrets are sealed to their endpoint: a sealed value copied elsewhere does not open.
const sealContext = (workspaceId: string, id: string) => `endpoints:${workspaceId}:${id}`;
const toEndpoint = (row: EndpointRow): Endpoint => ({
  id: row.id,
  url: row.url,
  events: row.events,
  enabled: row.enabled,
  has_secret: row.secret_sealed !== null,
  created_at: row.created_at.toISOString(),
});

export class EndpointStore {
  constructor(
    private readonly pool: Pool,
    private readonly secrets: SecretBox,
  ) {}

  async create(
    workspaceId: string,
    input: { url: string; events: string[]; secret?: string | null },
  ): Promise<Endpoint> {
    const id = randomUUID();
    const { rows } = await this.pool.query<EndpointRow>(
      `insert into endpoints (id, workspace_id, url, events, secret_sealed) values ($1, $2, $3, $4, $5) returning ${columns}`,
      [
        id,
        workspaceId,
        input.url,
        input.events,
        input.secret ? this.secrets.seal(input.secret, sealContext(workspaceId, id)) : null,
      ],
    );
    return toEndpoint(rows[0]!);
  }

  async exists(workspaceId: string, id: string): Promise<boolean> {
    const { rowCount } = await this.pool.query(
      'select 1 from endpoints where workspace_id = $1 and id = $2',
      [workspaceId, id],
    );
    return rowCount === 1;
  }

  /** Enabled endpoints of the workspace subscribed to this event type (or to every event). */
  async subscribedTo(
    workspaceId: string,
    eventType: string,
  ): Promise<Array<Endpoint & { secret: string | null }>> {
    const { rows } = await this.pool.query<EndpointRow>(
      `select ${columns} from endpoints where workspace_id = $1 and enabled and ($2 = any(events) or '*' = any(events))`,
      [workspaceId, eventType],
    );
    return rows.map((row) => ({
      ...toEndpoint(row),
      secret: row.secret_sealed
        ? this.secrets.open(row.secret_sealed, sealContext(row.workspace_id, row.id))
        : null,
    }));
  }
}
