import { AppError, type CommandPayload, platformTexts, type StageConfig } from '@inbox/contracts';
import { type Pool, withTransaction } from '@inbox/db';
import {
  addStage,
  assertUniqueKeys,
  removeStage,
  renameStage,
  reorderStages,
  stageOf,
} from '../domain/stages.js';
import { type PipelineRow, PipelineStore } from '../store/pipelines.js';

const pipelineNotFound = () => AppError.notFound(platformTexts.pipelineNotInWorkspace);

async function present(store: PipelineStore, rows: PipelineRow[]) {
  const counts = await store.contactsPerStage(rows.map((row) => row.id));
  return rows.map((row) => ({
    id: row.id,
    name: row.name,
    stages_config: row.stages_config.map((stage) => ({
      ...stage,
      contacts: counts.get(`${row.id}:${stage.key}`) ?? 0,
    })),
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  }));
}

/**
 * Edits the pipeline's stage list under a row lock, so concurrent edits never lose one another. Its
 * contacts are counted after the commit: counting a large pipeline's every stage held the lock, and every
 * outbox relay's fence, for as long.
 */
async function editStages(
  pool: Pool,
  workspaceId: string,
  pipelineId: string,
  edit: (stages: StageConfig[], store: PipelineStore) => Promise<StageConfig[]> | StageConfig[],
) {
  const updated = await withTransaction(pool, async (client) => {
    const store = new PipelineStore(client, workspaceId);
    const pipeline = await store.get(pipelineId, { forUpdate: true });
    if (!pipeline) throw pipelineNotFound();
    return store.update(pipelineId, { stages: await edit(pipeline.stages_config, store) });
  });
  return (await present(new PipelineStore(pool, workspaceId), [updated]))[0]!;
}

/**
 * How many of a removed stage's contacts one statement moves, before the edit's transaction moves the
 * rest: one statement moving every contact of a stage held the pipeline's lock and every outbox relay's
 * fence for seconds once a tenant's stage held a few hundred thousand.
 */
const contactsMovedPerStatement = 1_000;

/** The admin API's pipeline operations. */
export const pipelines = {
  async create(pool: Pool, command: CommandPayload<'cmd.pipeline.create'>) {
    const store = new PipelineStore(pool, command.workspace_id);
    const created = await store.create(command.name, assertUniqueKeys(command.stages));
    return (await present(store, [created]))[0]!;
  },

  async list(pool: Pool, command: CommandPayload<'cmd.pipeline.list'>) {
    const store = new PipelineStore(pool, command.workspace_id);
    return { pipelines: await present(store, await store.list()) };
  },

  async get(pool: Pool, command: CommandPayload<'cmd.pipeline.get'>) {
    const store = new PipelineStore(pool, command.workspace_id);
    const pipeline = await store.get(command.pipeline_id);
    if (!pipeline) throw pipelineNotFound();
    return (await present(store, [pipeline]))[0]!;
  },

  async rename(pool: Pool, command: CommandPayload<'cmd.pipeline.rename'>) {
    const store = new PipelineStore(pool, command.workspace_id);
    if (!(await store.get(command.pipeline_id))) throw pipelineNotFound();
    return (await present(store, [await store.update(command.pipeline_id, { name: command.name })]))[0]!;
  },

  addStage: (pool: Pool, command: CommandPayload<'cmd.pipeline.add-stage'>) =>
    editStages(pool, command.workspace_id, command.pipeline_id, (stages) =>
      addStage(stages, { key: command.key, name: command.name }, command.position),
    ),

  renameStage: (pool: Pool, command: CommandPayload<'cmd.pipeline.rename-stage'>) =>
    editStages(pool, command.workspace_id, command.pipeline_id, (stages) =>
      renameStage(stages, command.key, command.name),
    ),

  reorderStages: (pool: Pool, command: CommandPayload<'cmd.pipeline.reorder-stages'>) =>
    editStages(pool, command.workspace_id, command.pipeline_id, (stages) =>
      reorderStages(stages, command.keys),
    ),

  /**
   * A stage that holds contacts goes only when told where they go (`move_to`); their moves are recorded,
   * a thousand a statement before the edit, which moves those who came meanwhile. Stopped part-way, the
   * stage stays, and those moved stay where they went.
   */
  async removeStage(pool: Pool, command: CommandPayload<'cmd.pipeline.remove-stage'>) {
    const movedBy = platformTexts.movedByStageRemoval(command.key);
    if (command.move_to) {
      const store = new PipelineStore(pool, command.workspace_id);
      const pipeline = await store.get(command.pipeline_id);
      if (!pipeline) throw pipelineNotFound();
      // Checked before anyone is moved; checked again, under the lock, by the edit.
      removeStage(pipeline.stages_config, command.key, command.move_to);
      const moving = () =>
        store.moveFrom(pipeline.id, command.key, command.move_to!, movedBy, contactsMovedPerStatement);
      // No more batches than the stage held: two removals moving contacts each into the other's stage
      // would otherwise pass them back and forth for as long as both ran.
      let batches = Math.ceil((await store.contactsIn(pipeline.id, command.key)) / contactsMovedPerStatement);
      while (batches-- > 0 && (await moving()) === contactsMovedPerStatement);
    }
    return editStages(pool, command.workspace_id, command.pipeline_id, async (stages, store) => {
      const remaining = removeStage(stages, command.key, command.move_to);
      const held = await store.contactsIn(command.pipeline_id, command.key);
      if (held > 0) {
        if (!command.move_to) {
          throw new AppError(409, {
            error: platformTexts.stageHoldsContacts(command.key, held),
          });
        }
        await store.moveFrom(command.pipeline_id, command.key, command.move_to, movedBy, null);
      }
      return remaining;
    });
  },

  async listPositions(pool: Pool, command: CommandPayload<'cmd.pipeline.list-positions'>) {
    const store = new PipelineStore(pool, command.workspace_id);
    if (!(await store.get(command.pipeline_id))) throw pipelineNotFound();
    const positions = await store.positions(command.pipeline_id, command.limit);
    return { positions: positions.map((row) => ({ ...row, moved_at: row.moved_at.toISOString() })) };
  },

  async contactStages(pool: Pool, command: CommandPayload<'cmd.pipeline.contact-stages'>) {
    const rows = await new PipelineStore(pool, command.workspace_id).stagesOfContact(command.contact_id);
    return {
      stages: rows.map((row) => ({
        pipeline_id: row.pipeline_id,
        pipeline_name: row.name,
        stage: row.stage,
        stage_name: stageOf(row.stages_config, row.stage)?.name ?? row.stage,
        moved_at: row.moved_at.toISOString(),
      })),
    };
  },

  async leadHistory(pool: Pool, command: CommandPayload<'cmd.pipeline.lead-history'>) {
    const store = new PipelineStore(pool, command.workspace_id);
    if (!(await store.get(command.pipeline_id))) throw pipelineNotFound();
    const moves = await store.history(command.pipeline_id, command.contact_id, command);
    // An empty page after a move that is not this contact's would read as the history's end.
    if (
      moves.length === 0 &&
      command.after &&
      !(await store.hasMove(command.pipeline_id, command.contact_id, command.after))
    )
      throw AppError.badRequest(platformTexts.leadMoveAfterUnknown);
    return { moves: moves.map((move) => ({ ...move, moved_at: move.moved_at.toISOString() })) };
  },
};
