import { randomUUID } from 'node:crypto';
import { AppError, platformTexts } from '@inbox/contracts';
import type { Queryable } from '@inbox/db';

const iso = (value: Date) => value.toISOString();

/** Members (people) and AI agents of a workspace: who a conversation can be assigned to. */
export class TeamStore {
  constructor(
    private readonly db: Queryable,
    private readonly workspaceId: string,
  ) {}

  async createMember(name: string, email: string) {
    const { rows } = await this.db.query<{ id: string; name: string; email: string; created_at: Date }>(
      `insert into members (id, workspace_id, name, email) values ($1, $2, $3, $4)
       on conflict (workspace_id, email) do nothing returning id, name, email, created_at`,
      [randomUUID(), this.workspaceId, name, email.toLowerCase()],
    );
    if (!rows[0]) throw new AppError(409, { error: platformTexts.memberEmailTaken });
    return { ...rows[0], created_at: iso(rows[0].created_at) };
  }

  async createAgent(name: string) {
    const { rows } = await this.db.query<{ id: string; name: string; created_at: Date }>(
      'insert into agents (id, workspace_id, name) values ($1, $2, $3) returning id, name, created_at',
      [randomUUID(), this.workspaceId, name],
    );
    return { ...rows[0]!, created_at: iso(rows[0]!.created_at) };
  }

  async members() {
    const { rows } = await this.db.query<{ id: string; name: string; email: string; created_at: Date }>(
      'select id, name, email, created_at from members where workspace_id = $1 order by name, id',
      [this.workspaceId],
    );
    return rows.map((row) => ({ ...row, created_at: iso(row.created_at) }));
  }

  async agents() {
    const { rows } = await this.db.query<{ id: string; name: string; created_at: Date }>(
      'select id, name, created_at from agents where workspace_id = $1 order by name, id',
      [this.workspaceId],
    );
    return rows.map((row) => ({ ...row, created_at: iso(row.created_at) }));
  }

  /** True when the assignee exists in this workspace: a member for `human`, an AI agent for `agent`. */
  async exists(type: 'human' | 'agent', id: string): Promise<boolean> {
    const table = type === 'human' ? 'members' : 'agents';
    const { rowCount } = await this.db.query(`select 1 from ${table} where workspace_id = $1 and id = $2`, [
      this.workspaceId,
      id,
    ]);
    return rowCount === 1;
  }
}
