import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { openApiDocument } from '../src/openapi.js';

const root = new URL('../../../', import.meta.url);
/** Checked in; `npm run openapi` writes it, and a test fails while it differs from what would be written. */
export const documentPath = 'docs/openapi.json';

/** The gateway's OpenAPI document, formatted as the repository formats its JSON. */
export function openApiJson(): string {
  const biome = createRequire(import.meta.url).resolve('@biomejs/biome/bin/biome');
  return execFileSync(process.execPath, [biome, 'format', `--stdin-file-path=${documentPath}`], {
    cwd: fileURLToPath(root),
    input: JSON.stringify(openApiDocument(), null, 2),
    encoding: 'utf8',
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(new URL(documentPath, root), openApiJson());
  console.log(`wrote ${documentPath}`);
}
