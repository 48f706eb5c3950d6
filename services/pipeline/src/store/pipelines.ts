import { randomUUID } from 'node:crypto';
import type { StageConfig } from '@inbox/contracts';
import type { Queryable } from '@inbox/db';

export interface PipelineRow {
  id: string;
  name: string;
  stages_config: StageConfig[];
  created_at: Date;
  updated_at: Date;
}

const columns = 'id, name, stages_config, created_at, updated_at';

/** Pipelines, positions and moves of one workspace; every statement names the workspace. */
export class PipelineStore {
  constructor(
    private readonly db: Queryable,
    private readonly workspaceId: string,
  ) {}

  async create(name: string, stages: StageConfig[]): Promise<PipelineRow> {
    const { rows } = await this.db.query<PipelineRow>(
      `insert into pipelines (id, workspace_id, name, stages_config) values ($1, $2, $3, $4) returning ${columns}`,
      [randomUUID(), this.workspaceId, name, JSON.stringify(stages)],
    );
    return rows[0]!;
  }

  /** The pipeline, locked for this transaction when `forUpdate`; undefined when not this workspace's. */
  async get(pipelineId: string, { forUpdate = false } = {}): Promise<PipelineRow | undefined> {
    const { rows } = await this.db.query<PipelineRow>(
      `select ${columns} from pipelines where workspace_id = $1 and id = $2${forUpdate ? ' for update' : ''}`,
      [this.workspaceId, pipelineId],
    );
    return rows[0];
  }

  async list(): Promise<PipelineRow[]> {
    const { rows } = await this.db.query<PipelineRow>(
      `select ${columns} from pipelines where workspace_id = $1 order by created_at, id`,
      [this.workspaceId],
    );
    return rows;
  }

  async update(pipelineId: string, changes: { name?: string; stages?: StageConfig[] }): Promise<PipelineRow> {
    const { rows } = await this.db.query<PipelineRow>(
      `update pipelines set name = coalesce($3, name), stages_config = coalesce($4::jsonb, stages_config), updated_at = now()
        where workspace_id = $1 and id = $2 returning ${columns}`,
      [
        this.workspaceId,
        pipelineId,
        changes.name ?? null,
        changes.stages ? JSON.stringify(changes.stages) : null,
      ],
    );
    return rows[0]!;
  }

  async contactsPerStage(pipelineIds: string[]): Promise<Map<string, number>> {
    const { rows } = await this.db.query<{ pipeline_id: string; stage: string; n: number }>(
      `select pipeline_id, stage, count(*)::int as n from lead_positions
        where workspace_id = $1 and pipeline_id = any($2) group by pipeline_id, stage`,
      [this.workspaceId, pipelineIds],
    );
    return new Map(rows.map((row) => [`${row.pipeline_id}:${row.stage}`, row.n]));
  }

  /** How many contacts stand in the stage. */
  async contactsIn(pipelineId: string, stage: string): Promise<number> {
    const { rows } = await this.db.query<{ n: number }>(
      'select count(*)::int as n from lead_positions where workspace_id = $1 and pipeline_id = $2 and stage = $3',
      [this.workspaceId, pipelineId, stage],
    );
    return rows[0]!.n;
  }

  /** Who stands where in the pipeline, the most recently moved first, up to `limit`. */
  async positions(pipelineId: string, limit: number) {
    const { rows } = await this.db.query<{ contact_id: string; stage: string; moved_at: Date }>(
      `select contact_id, stage, moved_at from lead_positions
        where workspace_id = $1 and pipeline_id = $2 order by moved_at desc, contact_id limit $3`,
      [this.workspaceId, pipelineId, limit],
    );
    return rows;
  }

  async positionOf(pipelineId: string, contactId: string): Promise<string | undefined> {
    const { rows } = await this.db.query<{ stage: string }>(
      'select stage from lead_positions where workspace_id = $1 and pipeline_id = $2 and contact_id = $3 for update',
      [this.workspaceId, pipelineId, contactId],
    );
    return rows[0]?.stage;
  }

  async recordMove(move: {
    pipelineId: string;
    contactId: string;
    from: string | null;
    to: string;
    movedBy: string;
    conversationId: string | null;
  }): Promise<Date> {
    const { rows } = await this.db.query<{ moved_at: Date }>(
      `insert into lead_moves (id, workspace_id, pipeline_id, contact_id, from_stage, to_stage, moved_by, conversation_id)
       values ($1, $2, $3, $4, $5, $6, $7, $8) returning moved_at`,
      [
        randomUUID(),
        this.workspaceId,
        move.pipelineId,
        move.contactId,
        move.from,
        move.to,
        move.movedBy,
        move.conversationId,
      ],
    );
    const movedAt = rows[0]!.moved_at;
    await this.db.query(
      `insert into lead_positions (workspace_id, pipeline_id, contact_id, stage, moved_at) values ($1, $2, $3, $4, $5)
       on conflict (pipeline_id, contact_id) do update set stage = excluded.stage, moved_at = excluded.moved_at`,
      [this.workspaceId, move.pipelineId, move.contactId, move.to, movedAt],
    );
    return movedAt;
  }

  /**
   * Up to `limit` of those in `from` (all when null) go to `to`, each move recorded; for removing a stage
   * that holds contacts. Contacts a move of their own holds are passed over when a limit is given (the
   * last, unlimited call waits for them). No one is moved unless the pipeline has both stages, read under
   * a share lock for the statement: an edit that removes either waits for it, or has gone before it.
   */
  async moveFrom(
    pipelineId: string,
    from: string,
    to: string,
    movedBy: string,
    limit: number | null,
  ): Promise<number> {
    const { rowCount } = await this.db.query(
      `with pipeline as (
         select 1 from pipelines
          where workspace_id = $1 and id = $2
            and stages_config @> jsonb_build_array(jsonb_build_object('key', $3::text))
            and stages_config @> jsonb_build_array(jsonb_build_object('key', $4::text))
          for share),
       picked as (
         select contact_id from lead_positions
          where workspace_id = $1 and pipeline_id = $2 and stage = $3 and exists (select 1 from pipeline)
          limit $6 for update ${limit === null ? '' : 'skip locked'}),
       moved as (
         update lead_positions p set stage = $4, moved_at = now() from picked
          where p.workspace_id = $1 and p.pipeline_id = $2 and p.contact_id = picked.contact_id
         returning p.contact_id)
       insert into lead_moves (id, workspace_id, pipeline_id, contact_id, from_stage, to_stage, moved_by)
       select gen_random_uuid(), $1, $2, contact_id, $3, $4, $5 from moved`,
      [this.workspaceId, pipelineId, from, to, movedBy, limit],
    );
    return rowCount ?? 0;
  }

  async stagesOfContact(contactId: string) {
    const { rows } = await this.db.query<{
      pipeline_id: string;
      name: string;
      stages_config: StageConfig[];
      stage: string;
      moved_at: Date;
    }>(
      `select p.id as pipeline_id, p.name, p.stages_config, l.stage, l.moved_at
         from lead_positions l join pipelines p on p.id = l.pipeline_id and p.workspace_id = l.workspace_id
        where l.workspace_id = $1 and l.contact_id = $2 order by p.created_at, p.id`,
      [this.workspaceId, contactId],
    );
    return rows;
  }

  async hasMove(pipelineId: string, contactId: string, moveId: string): Promise<boolean> {
    const { rows } = await this.db.query(
      'select 1 from lead_moves where id = $4 and workspace_id = $1 and pipeline_id = $2 and contact_id = $3',
      [this.workspaceId, pipelineId, contactId, moveId],
    );
    return rows.length > 0;
  }

  /** A page of a contact's moves, oldest first, after the move `after` (one of this contact's). */
  async history(pipelineId: string, contactId: string, { after, limit }: { after?: string; limit: number }) {
    const { rows } = await this.db.query<{
      id: string;
      from_stage: string | null;
      to_stage: string;
      moved_at: Date;
      moved_by: string;
      conversation_id: string | null;
    }>(
      `select id, from_stage, to_stage, moved_at, moved_by, conversation_id from lead_moves
        where workspace_id = $1 and pipeline_id = $2 and contact_id = $3
          and ($4::uuid is null or (moved_at, id) > (
            select moved_at, id from lead_moves
             where id = $4 and workspace_id = $1 and pipeline_id = $2 and contact_id = $3))
        order by moved_at, id limit $5`,
      [this.workspaceId, pipelineId, contactId, after ?? null, limit],
    );
    return rows;
  }
}
