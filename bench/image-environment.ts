// What the images set for the Node process itself (deploy/Dockerfile's runtime stage), so that a bench run
// "as the images run" takes it from the one place it is declared instead of from flags someone must
// remember to pass.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The runtime variables that tune Node and the C library; the rest (NODE_ENV, SERVICE…) is the image's own business. */
const RUNTIME_TUNING = ['NODE_OPTIONS', 'MALLOC_ARENA_MAX'] as const;

export function imageRuntimeEnvironment(
  dockerfile = fileURLToPath(new URL('../deploy/Dockerfile', import.meta.url)),
): Record<string, string> {
  const instructions = readFileSync(dockerfile, 'utf8')
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith('#'));
  const runtimeStage = instructions.slice(instructions.findLastIndex((line) => line.startsWith('FROM ')));
  const declared = new Map<string, string>();
  for (const line of runtimeStage.filter((instruction) => instruction.startsWith('ENV '))) {
    for (const [, name, value] of line.slice(4).matchAll(/([A-Z_][A-Z0-9_]*)=(\S*)/g))
      declared.set(name!, value!);
  }
  const environment: Record<string, string> = {};
  for (const name of RUNTIME_TUNING) {
    const value = declared.get(name);
    if (value === undefined) throw new Error(`${dockerfile} sets no ${name} in its runtime stage`);
    environment[name] = value;
  }
  return environment;
}
