import { randomUUID } from 'node:crypto';
import { AppError, type CommandPayload, platformTexts } from '@inbox/contracts';
import type { Pool } from '@inbox/db';
import { migratedPool, watchedPool } from '@inbox/testkit';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { pipelines } from '../src/handlers/pipelines.js';
import { PipelineStore } from '../src/store/pipelines.js';

let pool: Pool;
beforeAll(async () => {
  pool = await migratedPool({
    adminUrl: inject('infra').postgresAdminUrl,
    schema: 'pipeline',
    migrations: new URL('../migrations', import.meta.url),
    outbox: true,
  });
});
afterAll(async () => {
  await pool?.end();
});

/** A pipeline of three stages with `count` contacts in the first. */
async function pipelineWithContacts(count: number) {
  const workspaceId = randomUUID();
  const pipeline = await new PipelineStore(pool, workspaceId).create('vendas', [
    { key: 'novo', name: 'Novo' },
    { key: 'contato', name: 'Contato' },
    { key: 'ganho', name: 'Ganho' },
  ]);
  await pool.query(
    `insert into lead_positions (workspace_id, pipeline_id, contact_id, stage, moved_at)
     select $1, $2, gen_random_uuid(), 'novo', now() from generate_series(1, $3)`,
    [workspaceId, pipeline.id, count],
  );
  return { workspaceId, pipelineId: pipeline.id };
}

const removal = (workspaceId: string, pipelineId: string, moveTo?: string) =>
  ({
    workspace_id: workspaceId,
    pipeline_id: pipelineId,
    key: 'novo',
    ...(moveTo ? { move_to: moveTo } : {}),
  }) as CommandPayload<'cmd.pipeline.remove-stage'>;

it("moves a removed stage's contacts a thousand a statement, each move recorded, then removes it", async () => {
  const { workspaceId, pipelineId } = await pipelineWithContacts(2_500);
  const moves: number[] = [];
  const counting = watchedPool(pool, (text, rows) => {
    if (text.startsWith('with pipeline')) moves.push(rows);
  });
  const removed = await pipelines.removeStage(counting, removal(workspaceId, pipelineId, 'ganho'));
  expect(moves).toEqual([1_000, 1_000, 500]);
  expect(removed.stages_config.map((stage) => [stage.key, stage.contacts])).toEqual([
    ['contato', 0],
    ['ganho', 2_500],
  ]);
  const { rows } = await pool.query<{ n: number; moved_by: string }>(
    `select count(*)::int as n, min(moved_by) as moved_by from lead_moves
      where workspace_id = $1 and from_stage = 'novo' and to_stage = 'ganho'`,
    [workspaceId],
  );
  expect(rows).toEqual([{ n: 2_500, moved_by: platformTexts.movedByStageRemoval('novo') }]);
});

it('moves no one when the stage cannot go, and keeps a stage that holds contacts without move_to', async () => {
  const { workspaceId, pipelineId } = await pipelineWithContacts(3);
  const refused = await pipelines
    .removeStage(pool, removal(workspaceId, pipelineId, 'nenhum'))
    .catch((e) => e);
  expect(refused).toBeInstanceOf(AppError);
  expect((refused as AppError).status).toBe(400);
  const held = await pipelines.removeStage(pool, removal(workspaceId, pipelineId)).catch((e) => e);
  expect((held as AppError).status).toBe(409);
  expect(await new PipelineStore(pool, workspaceId).contactsIn(pipelineId, 'novo')).toBe(3);
});

it('moves no one into a stage an edit removed meanwhile, nor from another workspace', async () => {
  const { workspaceId, pipelineId } = await pipelineWithContacts(3);
  const store = new PipelineStore(pool, workspaceId);
  // Another removal, of the destination, ended between this removal's check and its moves.
  await pipelines.removeStage(pool, {
    workspace_id: workspaceId,
    pipeline_id: pipelineId,
    key: 'ganho',
  } as CommandPayload<'cmd.pipeline.remove-stage'>);
  expect(await store.moveFrom(pipelineId, 'novo', 'ganho', 'x', 1_000)).toBe(0);
  expect(
    await new PipelineStore(pool, randomUUID()).moveFrom(pipelineId, 'novo', 'contato', 'x', 1_000),
  ).toBe(0);
  expect(await store.contactsIn(pipelineId, 'novo')).toBe(3);
});
