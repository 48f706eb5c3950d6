import { AppError, platformTexts, type StageConfig } from '@inbox/contracts';

/** Stage lists are edited as values: each change returns a new list, or fails with the reason. */
export function assertUniqueKeys(stages: StageConfig[]): StageConfig[] {
  const seen = new Set<string>();
  for (const { key } of stages) {
    if (seen.has(key)) throw AppError.badRequest(platformTexts.stageKeyRepeated(key));
    seen.add(key);
  }
  return stages;
}

export function stageOf(stages: StageConfig[], key: string): StageConfig | undefined {
  return stages.find((stage) => stage.key === key);
}

function requireStage(stages: StageConfig[], key: string): StageConfig {
  const stage = stageOf(stages, key);
  if (!stage) throw AppError.notFound(platformTexts.stageNotInPipeline(key));
  return stage;
}

export function addStage(stages: StageConfig[], stage: StageConfig, position = stages.length): StageConfig[] {
  const next = [...stages];
  next.splice(Math.min(position, stages.length), 0, stage);
  return assertUniqueKeys(next);
}

export function renameStage(stages: StageConfig[], key: string, name: string): StageConfig[] {
  requireStage(stages, key);
  return stages.map((stage) => (stage.key === key ? { ...stage, name } : stage));
}

export function reorderStages(stages: StageConfig[], keys: string[]): StageConfig[] {
  const sameSet =
    keys.length === stages.length &&
    new Set(keys).size === keys.length &&
    keys.every((key) => stageOf(stages, key));
  if (!sameSet) throw AppError.badRequest(platformTexts.stageKeysNotPermutation);
  return keys.map((key) => stageOf(stages, key)!);
}

export function removeStage(
  stages: StageConfig[],
  key: string,
  moveTo: string | null | undefined,
): StageConfig[] {
  requireStage(stages, key);
  if (stages.length === 1) throw AppError.badRequest(platformTexts.lastStage);
  if (moveTo !== undefined && moveTo !== null && (moveTo === key || !stageOf(stages, moveTo))) {
    throw AppError.badRequest(platformTexts.moveToInvalid);
  }
  return stages.filter((stage) => stage.key !== key);
}
