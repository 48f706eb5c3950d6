import { describe, expect, it } from 'vitest';
import { addStage, assertUniqueKeys, removeStage, renameStage, reorderStages } from './stages.js';

const stages = [
  { key: 'new', name: 'Novo' },
  { key: 'won', name: 'Ganho' },
];

describe('stage lists', () => {
  it('add at a position, keeping keys unique', () => {
    expect(addStage(stages, { key: 'talk', name: 'Conversa' }, 1).map((s) => s.key)).toEqual([
      'new',
      'talk',
      'won',
    ]);
    expect(addStage(stages, { key: 'lost', name: 'Perdido' }).map((s) => s.key)).toEqual([
      'new',
      'won',
      'lost',
    ]);
    expect(() => addStage(stages, { key: 'won', name: 'x' })).toThrow(/se repete/);
    expect(() => assertUniqueKeys([...stages, { key: 'new', name: 'y' }])).toThrow(/"new"/);
  });

  it('rename, reorder and remove', () => {
    expect(renameStage(stages, 'won', 'Fechado')[1]).toEqual({ key: 'won', name: 'Fechado' });
    expect(() => renameStage(stages, 'nope', 'x')).toThrow(/não encontrado/);
    expect(reorderStages(stages, ['won', 'new']).map((s) => s.key)).toEqual(['won', 'new']);
    expect(() => reorderStages(stages, ['won'])).toThrow(/exatamente uma vez/);
    expect(() => reorderStages(stages, ['won', 'won'])).toThrow(/exatamente uma vez/);
    expect(removeStage(stages, 'won', 'new')).toEqual([{ key: 'new', name: 'Novo' }]);
    expect(() => removeStage(stages, 'won', 'won')).toThrow(/move_to/);
    expect(() => removeStage([stages[0]!], 'new', undefined)).toThrow(/ao menos um/);
  });
});
