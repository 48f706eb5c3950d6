// What the images set for the Node process itself (deploy/Dockerfile's runtime stage), so that a bench run
// "as the images run" takes it from the one place it is declared instead of from flags someone must
// remember to pass.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The runtime variables that tune Node and its allocator; the rest (NODE_ENV, SERVICE…) is the image's own business. */
const RUNTIME_TUNING = ['NODE_OPTIONS', 'LD_PRELOAD', 'MALLOC_CONF'] as const;

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
  environment.LD_PRELOAD = onThisMachine(environment.LD_PRELOAD!);
  return environment;
}

/**
 * The image's preloaded library as this machine has it: the image links it to a path of its own, and a
 * path the loader cannot find is only a warning on stderr, the process then running on glibc's malloc,
 * which would be measured in its place.
 */
function onThisMachine(preload: string): string {
  if (existsSync(preload)) return preload;
  const name = preload.split('/').at(-1)!;
  for (const directory of ['/usr/lib', ...readdirSync('/usr/lib').map((d) => `/usr/lib/${d}`)]) {
    if (existsSync(`${directory}/${name}`)) return `${directory}/${name}`;
  }
  throw new Error(
    `the images preload ${name}, which this machine lacks: apt-get install -y libjemalloc2 (or BENCH_IMAGE_ENV=off to run without the image's settings)`,
  );
}
