import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
export const panelRoot = join(repoRoot, 'apps/panel');
/** What the gateway serves at /panel when it runs from source. */
export const panelDist = join(panelRoot, 'dist');
const digestFile = '.source-digest';

/** What the bundle is made of: the panel's own files, and the workspace sources and packages it bundles. */
const inputs = [
  'apps/panel/index.html',
  'apps/panel/package.json',
  'apps/panel/public',
  'apps/panel/vite.config.ts',
  'apps/panel/src',
  'libs/contracts/src',
  'libs/sdk/src',
  'package-lock.json',
];

function filesOf(path: string): string[] {
  const absolute = join(repoRoot, path);
  if (!existsSync(absolute)) return [];
  if (!statSync(absolute).isDirectory()) return [absolute];
  return readdirSync(absolute, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && !entry.name.endsWith('.test.ts'))
    .map((entry) => join(entry.parentPath, entry.name));
}

/** A digest of every input's path and bytes: unlike times, it survives checkouts and copies. */
export function panelSourceDigest(): string {
  const hash = createHash('sha256');
  for (const file of inputs.flatMap(filesOf).sort()) {
    hash.update(relative(repoRoot, file)).update('\0').update(readFileSync(file)).update('\0');
  }
  return hash.digest('hex');
}

function builtDigest(): string | undefined {
  try {
    return readFileSync(join(panelDist, digestFile), 'utf8');
  } catch {
    return undefined;
  }
}

function viteBuild(outDir: string): Promise<void> {
  const vite = join(
    dirname(createRequire(join(panelRoot, 'package.json')).resolve('vite/package.json')),
    'bin/vite.js',
  );
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [vite, 'build', '--outDir', outDir, '--emptyOutDir', '--logLevel', 'warn'],
      {
        cwd: panelRoot,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk));
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`the panel's build failed (exit ${code}):\n${output}`)),
    );
  });
}

/**
 * Builds the panel into apps/panel/dist unless the build there was made from the sources as they are now
 * (a build takes about a second). Several callers may build at once (test files, `npm start`): each
 * builds into a directory of its own and swaps it in, so dist/ is only ever a whole build.
 */
export async function ensurePanelBuilt(log?: (line: string) => void): Promise<{ built: boolean }> {
  const digest = panelSourceDigest();
  if (builtDigest() === digest) return { built: false };
  log?.('Building the panel (apps/panel)…');
  const out = mkdtempSync(join(panelRoot, '.build-'));
  try {
    await viteBuild(out);
    writeFileSync(join(out, digestFile), digest);
    if (builtDigest() === digest) return { built: false };
    const replaced = `${out}-replaced`;
    try {
      if (existsSync(panelDist)) renameSync(panelDist, replaced);
      renameSync(out, panelDist);
    } catch (error) {
      // Another build of the same sources got there between the two renames: it is as good as ours.
      if (builtDigest() !== digest) throw error;
    } finally {
      rmSync(replaced, { recursive: true, force: true });
    }
    return { built: true };
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}
