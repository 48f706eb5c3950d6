import { readFileSync } from 'node:fs';
import { expect, it } from 'vitest';
import { generateTypes, typesPath } from '../scripts/generate-types.js';

it('checks in the types of docs/openapi.json as they are generated (npm run sdk:generate)', async () => {
  const checkedIn = readFileSync(new URL(`../../../${typesPath}`, import.meta.url), 'utf8');
  expect(checkedIn).toBe(await generateTypes());
});
