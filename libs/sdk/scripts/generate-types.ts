import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import openapiTS, { astToString, COMMENT_HEADER } from 'openapi-typescript';

const root = new URL('../../../', import.meta.url);
/** Written by `npm run openapi` from @inbox/contracts' route table. */
const documentPath = 'docs/openapi.json';
export const typesPath = 'libs/sdk/src/generated/api.ts';

/** The SDK's types for the OpenAPI document, formatted as the repository formats its TypeScript. */
export async function generateTypes(): Promise<string> {
  // A field with a default may be left out of a request: it must stay optional in the types.
  const ast = await openapiTS(new URL(documentPath, root), { defaultNonNullable: false });
  const types = COMMENT_HEADER + astToString(ast);
  const biome = createRequire(import.meta.url).resolve('@biomejs/biome/bin/biome');
  return execFileSync(process.execPath, [biome, 'format', `--stdin-file-path=${typesPath}`], {
    cwd: fileURLToPath(root),
    input: types,
    encoding: 'utf8',
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(new URL(typesPath, root), await generateTypes());
}
