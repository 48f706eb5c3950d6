import { randomUUID } from 'node:crypto';
import { type Pool, withTransaction } from '@inbox/db';
import { generateApiKey, hashApiKey, keyHint } from '../domain/api-key.js';

export type WorkspaceStatus = 'active' | 'inactive' | 'suspended';

export interface Workspace {
  id: string;
  name: string;
  status: WorkspaceStatus;
  default_country_code: string;
  created_at: string;
}

const columns = 'id, name, status, default_country_code, created_at';
const toWorkspace = (row: Workspace & { created_at: Date | string }): Workspace => ({
  ...row,
  created_at: new Date(row.created_at).toISOString(),
});

export class WorkspaceStore {
  constructor(private readonly pool: Pool) {}

  /** Creates the workspace and its first key; the key is returned once and never stored in clear. */
  async create(input: {
    name: string;
    default_country_code: string;
  }): Promise<{ workspace: Workspace; apiKey: string }> {
    const apiKey = generateApiKey();
    const workspace = await withTransaction(this.pool, async (client) => {
      const { rows } = await client.query(
        `insert into workspaces (id, name, default_country_code) values ($1, $2, $3) returning ${columns}`,
        [randomUUID(), input.name, input.default_country_code],
      );
      const created = toWorkspace(rows[0]);
      await client.query('insert into api_keys (workspace_id, key_hash, key_hint) values ($1, $2, $3)', [
        created.id,
        hashApiKey(apiKey),
        keyHint(apiKey),
      ]);
      return created;
    });
    return { workspace, apiKey };
  }

  /** Every workspace, the newest first: the operator's list, which grows only by the operator's hand. */
  async list(): Promise<Workspace[]> {
    const { rows } = await this.pool.query(`select ${columns} from workspaces order by created_at desc, id`);
    return rows.map(toWorkspace);
  }

  async get(workspaceId: string): Promise<Workspace | undefined> {
    const { rows } = await this.pool.query(`select ${columns} from workspaces where id = $1`, [workspaceId]);
    return rows[0] ? toWorkspace(rows[0]) : undefined;
  }

  async setStatus(workspaceId: string, status: WorkspaceStatus): Promise<Workspace | undefined> {
    const { rows } = await this.pool.query(
      `update workspaces set status = $2, updated_at = now() where id = $1 returning ${columns}`,
      [workspaceId, status],
    );
    return rows[0] ? toWorkspace(rows[0]) : undefined;
  }

  /** Replaces the workspace's key: the old one stops matching in the same statement. */
  async rotateKey(workspaceId: string): Promise<string> {
    const apiKey = generateApiKey();
    await this.pool.query(
      'update api_keys set key_hash = $2, key_hint = $3, created_at = now() where workspace_id = $1',
      [workspaceId, hashApiKey(apiKey), keyHint(apiKey)],
    );
    return apiKey;
  }

  /**
   * The workspace a key belongs to. The lookup is by SHA-256 of the key, so what the index compares is a
   * digest an attacker cannot steer byte by byte, not the secret itself.
   */
  async findByKeyDigest(digest: Buffer): Promise<(Workspace & { key_hint: string }) | undefined> {
    const { rows } = await this.pool.query(
      `select w.id, w.name, w.status, w.default_country_code, w.created_at, k.key_hint
         from api_keys k join workspaces w on w.id = k.workspace_id where k.key_hash = $1`,
      [digest],
    );
    return rows[0] ? { ...toWorkspace(rows[0]), key_hint: rows[0].key_hint } : undefined;
  }
}
