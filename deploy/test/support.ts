// Shared by the deploy/ tests: the repository root, YAML views, the Kustomize runner and the loader of
// the dev dependencies these checks need. Nothing here skips: a missing tool or package fails the test
// that needs it, with the command that installs it.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';

export const root = fileURLToPath(new URL('../..', import.meta.url));
export const read = (path: string): string => readFileSync(join(root, path), 'utf8');

// ---------------------------------------------------------------------------------------------------
// Small typed views of parsed YAML.

export type Dict = Record<string, unknown>;
export const isDict = (value: unknown): value is Dict =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
export const dict = (value: unknown): Dict => (isDict(value) ? value : {});
export const list = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);
export const nameOf = (doc: Dict): string => String(dict(doc.metadata).name);
export const podSpec = (workload: Dict): Dict => dict(dict(dict(workload.spec).template).spec);
export const containersOf = (workload: Dict): Dict[] => list(podSpec(workload).containers).map(dict);
export const firstContainer = (workload: Dict): Dict => containersOf(workload)[0] ?? {};

/** Compose `environment` as a map, whichever of its two spellings (map or KEY=value list) is used. */
export function composeEnv(service: Dict): Record<string, string> {
  const environment = service.environment;
  if (Array.isArray(environment)) {
    return Object.fromEntries(
      environment.map((entry) => {
        const [key, ...rest] = String(entry).split('=');
        return [key, rest.join('=')];
      }),
    );
  }
  // `KEY: ${X:-}` interpolated as text leaves `KEY:`, which YAML reads as null; compose passes ''.
  return Object.fromEntries(
    Object.entries(dict(environment)).map(([key, value]) => [key, value === null ? '' : String(value)]),
  );
}

// ---------------------------------------------------------------------------------------------------
// Kustomize: a standalone `kustomize` v5 on PATH if there is one, else the one built into kubectl.

const KUSTOMIZE_MISSING = [
  'Building k8s/ needs kustomize v5: a standalone `kustomize` on PATH, or the one built into kubectl',
  '1.27 or later (`kubectl kustomize`).',
  "This project's machine image ships it (/usr/bin/kubectl, from google-cloud-cli). Debian's own",
  'kubernetes-client package (kubectl 1.20, kustomize v2) is too old, and no npm package ships it.',
  'Elsewhere install kubectl from the Kubernetes apt repository (apt-get install -y kubectl) or the',
  'kustomize release binary (https://kubectl.docs.kubernetes.io/installation/kustomize/).',
].join('\n');

interface Kustomize {
  command: string;
  args: string[];
  version: string;
}

let kustomize: Kustomize | undefined;

const majorOf = (version: string) => Number(/v?(\d+)\./.exec(version)?.[1] ?? 0);

function findKustomize(): Kustomize {
  if (kustomize) return kustomize;
  const standalone = spawnSync('kustomize', ['version'], { encoding: 'utf8' });
  if (!standalone.error && standalone.status === 0 && majorOf(standalone.stdout.trim()) >= 5) {
    kustomize = { command: 'kustomize', args: ['build'], version: standalone.stdout.trim() };
    return kustomize;
  }
  const kubectl = spawnSync('kubectl', ['version', '--client', '-o', 'json'], { encoding: 'utf8' });
  if (kubectl.error || kubectl.status !== 0) {
    throw new Error(`Neither kustomize v5 nor kubectl was found on PATH.\n${KUSTOMIZE_MISSING}`);
  }
  const version = String(dict(JSON.parse(kubectl.stdout)).kustomizeVersion ?? '');
  if (majorOf(version) < 5) {
    throw new Error(`kubectl carries kustomize "${version || 'unknown'}".\n${KUSTOMIZE_MISSING}`);
  }
  kustomize = { command: 'kubectl', args: ['kustomize'], version };
  return kustomize;
}

export type Bus = 'nats' | 'rabbitmq';

export interface Rendered {
  /** What was built, e.g. "k8s/overlays/production". */
  name: string;
  /** The broker the services use in it: RabbitMQ when the component k8s/components/rabbitmq is in. */
  bus: Bus;
  docs: Dict[];
}

export const RABBITMQ_COMPONENT = 'k8s/components/rabbitmq';

/** Builds a kustomization directory (relative to the repository root) into its manifests. */
export function kustomizeBuild(directory: string): Rendered {
  const tool = findKustomize();
  const output = execFileSync(tool.command, [...tool.args, join(root, directory)], {
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  return { name: directory, bus: 'nats', docs: parseYamlStream(output) };
}

/**
 * Builds an overlay that does not exist as a directory: `resources` and `components` (relative to the
 * repository root) in a temporary kustomization, as a user would write it (e.g. production with the KEDA
 * component, k8s/components/keda/README.md).
 */
export function kustomizeBuildComposed(
  name: string,
  spec: { namespace?: string; resources: string[]; components?: string[] },
): Rendered {
  const tool = findKustomize();
  const directory = mkdtempSync(join(tmpdir(), 'inbox-kustomize-'));
  try {
    // Kustomize refuses absolute paths in a kustomization; relative ones may leave its directory.
    const rel = (path: string) => relative(directory, join(root, path));
    const lines = [
      'apiVersion: kustomize.config.k8s.io/v1beta1',
      'kind: Kustomization',
      ...(spec.namespace ? [`namespace: ${spec.namespace}`] : []),
      'resources:',
      ...spec.resources.map((path) => `  - ${rel(path)}`),
      ...(spec.components?.length
        ? ['components:', ...spec.components.map((path) => `  - ${rel(path)}`)]
        : []),
    ];
    writeFileSync(join(directory, 'kustomization.yaml'), `${lines.join('\n')}\n`);
    const output = execFileSync(tool.command, [...tool.args, directory], {
      encoding: 'utf8',
      maxBuffer: 64 * 1024 * 1024,
    });
    const bus = spec.components?.includes(RABBITMQ_COMPONENT) ? 'rabbitmq' : 'nats';
    return { name, bus, docs: parseYamlStream(output) };
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}

export function parseYamlStream(text: string): Dict[] {
  return parseAllDocuments(text).flatMap((document) => {
    if (document.errors.length > 0) throw new Error(document.errors.map((e) => e.message).join('\n'));
    const value = document.toJS() as unknown;
    return isDict(value) ? [value] : [];
  });
}

let allOverlays: Rendered[] | undefined;

/** An overlay with components, named as `<overlay> + <component> + …`, in its overlay's namespace. */
function composed(overlay: string, namespace: string, components: string[]): Rendered {
  return kustomizeBuildComposed([overlay, ...components].join(' + '), {
    namespace,
    resources: [overlay],
    components,
  });
}

/**
 * Every overlay a user can apply, built the way they would build it (the components as their READMEs
 * show them); built once per test file. Called from each test rather than a hook, so that a missing
 * kustomize fails every test with its message.
 */
export function renderAllOverlays(): Rendered[] {
  allOverlays ??= [
    kustomizeBuild('k8s/base'),
    kustomizeBuild('k8s/overlays/dev'),
    kustomizeBuild('k8s/overlays/production'),
    composed('k8s/overlays/production', 'inbox', ['k8s/components/keda']),
    composed('k8s/overlays/production', 'inbox', [RABBITMQ_COMPONENT]),
    composed('k8s/overlays/dev', 'inbox-dev', [RABBITMQ_COMPONENT, 'k8s/components/rabbitmq-server']),
    composed('k8s/overlays/production', 'inbox', [RABBITMQ_COMPONENT, 'k8s/components/keda-rabbitmq']),
  ];
  return allOverlays;
}

/** One rendering of renderAllOverlays() by its name. */
export function rendered(name: string): Rendered {
  const found = renderAllOverlays().find((overlay) => overlay.name === name);
  if (!found) throw new Error(`no rendering named ${name}`);
  return found;
}

// ---------------------------------------------------------------------------------------------------
// Dev dependencies of these checks, loaded by name so that `tsc` stays clean before they are installed
// and the failure, if one is missing, says how to add it.

export const DEV_DEPENDENCIES = {
  ajv: '8.20.0',
  dclint: '3.1.0',
  'kubernetes-models': '4.5.1',
} as const;

export type DevDependency = keyof typeof DEV_DEPENDENCIES;

/** Installed where Node resolves it from this repository (npm hoists dev dependencies to the root). */
export const isInstalled = (name: DevDependency): boolean =>
  existsSync(join(root, 'node_modules', name, 'package.json'));

export function missingDependency(name: DevDependency, cause?: unknown): Error {
  return new Error(
    `The dev dependency ${name} is not installed; deploy/test needs it. Add it with:\n` +
      `  npm install --save-dev --save-exact ${name}@${DEV_DEPENDENCIES[name]}`,
    { cause },
  );
}

/** `import(<name>/<subpath>)`, failing with the install command when the package is missing. */
export async function importDevDependency(name: DevDependency, subpath = ''): Promise<Dict> {
  if (!isInstalled(name)) throw missingDependency(name);
  // A CommonJS package (ajv) may come back as its exports function rather than a namespace object.
  const module: unknown = await import(subpath ? `${name}/${subpath}` : name);
  return (typeof module === 'function' || isDict(module) ? module : {}) as Dict;
}

// ---------------------------------------------------------------------------------------------------
// Compose variable interpolation (${VAR}, ${VAR:-default}, ${VAR-default}, ${VAR:?error}, ${VAR?error},
// ${VAR:+alternative}, ${VAR+alternative}, nested as in ${A:-${B:-default}}, and $$ for a literal $), as
// `docker compose` does it before it validates and runs the file. A default is read only when it is used,
// so a required variable inside an unused default does not fail.

export function interpolate(text: string, env: Record<string, string | undefined>): string {
  let out = '';
  let at = 0;
  while (at < text.length) {
    const dollar = text.indexOf('$', at);
    if (dollar === -1 || dollar === text.length - 1) return out + text.slice(at);
    out += text.slice(at, dollar);
    const next = text[dollar + 1];
    if (next === '$') {
      out += '$';
      at = dollar + 2;
    } else if (next === '{') {
      const close = closingBrace(text, dollar + 2);
      out += substitute(text.slice(dollar + 2, close), env);
      at = close + 1;
    } else {
      out += '$';
      at = dollar + 1;
    }
  }
  return out;
}

/** Index of the `}` that closes the `${` whose body starts at `from`, nested `${…}` skipped. */
function closingBrace(text: string, from: number): number {
  let depth = 1;
  for (let i = from; i < text.length; i++) {
    if (text[i] === '$' && text[i + 1] === '{') {
      depth++;
      i++;
    } else if (text[i] === '}' && --depth === 0) {
      return i;
    }
  }
  throw new Error(`compose: unterminated \${ at ${text.slice(from - 2, from + 40)}`);
}

function substitute(body: string, env: Record<string, string | undefined>): string {
  const match = /^([A-Za-z_][A-Za-z0-9_]*)(?:(:?)([-?+])([\s\S]*))?$/.exec(body);
  if (!match) throw new Error(`compose: invalid interpolation \${${body}}`);
  const [, name = '', colon, op, arg = ''] = match;
  const value = env[name];
  const unset = value === undefined || (colon === ':' && value === '');
  if (!op) return value ?? '';
  if (op === '+') return unset ? '' : interpolate(arg, env);
  if (!unset) return value ?? '';
  if (op === '-') return interpolate(arg, env);
  throw new Error(`compose: required variable ${name} is missing: ${interpolate(arg, env)}`);
}
