// docker-compose.yml against the Compose Specification's JSON schema (compose-spec/compose-spec's
// schema/compose-spec.json, as the dclint package ships it), with ajv: the file as written and as
// `docker compose` sees it after variable interpolation, in either broker's mode; and, as compose checks
// before it starts anything, that no enabled service depends on one its profiles leave out.

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import {
  type Dict,
  dict,
  importDevDependency,
  interpolate,
  isInstalled,
  list,
  missingDependency,
  read,
} from './support.js';

interface AjvError {
  instancePath: string;
  message?: string;
  params: Record<string, unknown>;
}
type ValidateFunction = ((data: unknown) => boolean) & { errors?: AjvError[] | null };
type AjvClass = new (options: Record<string, unknown>) => { compile(schema: unknown): ValidateFunction };

interface Loaded {
  validate: ValidateFunction;
  schema: Dict;
}
let loaded: Loaded | undefined;

/** Loaded in each test (not in a hook), so that a missing package fails every test with its message. */
async function load(): Promise<Loaded> {
  if (loaded) return loaded;
  if (!isInstalled('dclint')) throw missingDependency('dclint');
  const ajvModule = await importDevDependency('ajv');
  const Ajv = (ajvModule.default ?? ajvModule) as AjvClass;
  const packageJson = createRequire(import.meta.url).resolve('dclint/package.json');
  const schema = dict(
    JSON.parse(readFileSync(join(dirname(packageJson), 'schemas/compose.schema.json'), 'utf8')),
  );
  // The spec's schema names its draft-07 meta-schema by an https URL ajv does not register, and is not
  // written for ajv's strict mode; neither changes what it accepts.
  const { $schema: _metaSchema, ...body } = schema;
  loaded = { validate: new Ajv({ allErrors: true, strict: false }).compile(body), schema };
  return loaded;
}

async function problems(data: unknown): Promise<string[]> {
  const { validate } = await load();
  return validate(data)
    ? []
    : (validate.errors ?? []).map(
        (e) => `${e.instancePath || '/'} ${e.message ?? ''} ${JSON.stringify(e.params)}`,
      );
}

describe('docker-compose.yml against the Compose Specification schema', () => {
  it('uses the Compose Specification schema', async () => {
    const { schema } = await load();
    expect(schema.title).toBe('Compose Specification');
    expect(schema.$id).toBe('compose_spec.json');
  });

  it('is valid as written', async () => {
    expect(await problems(parse(read('docker-compose.yml'), { merge: true }))).toEqual([]);
  });

  it('is valid once interpolated, as `docker compose up` reads it', async () => {
    const text = interpolate(read('docker-compose.yml'), {
      ADMIN_TOKEN: 'a'.repeat(32),
      ENCRYPTION_KEY: Buffer.alloc(32).toString('base64'),
    });
    expect(await problems(parse(text, { merge: true }))).toEqual([]);
  });

  it('is valid with BUS_URL pointing every service at RabbitMQ (the profile rabbitmq)', async () => {
    const text = interpolate(read('docker-compose.yml'), {
      ADMIN_TOKEN: 'a'.repeat(32),
      ENCRYPTION_KEY: Buffer.alloc(32).toString('base64'),
      BUS_URL: 'amqp://inbox:localrabbitmq@rabbitmq:5672',
    });
    expect(await problems(parse(text, { merge: true }))).toEqual([]);
  });

  it('rejects what the specification does not allow (the validator is really at work)', async () => {
    const compose = parse(read('docker-compose.yml'), { merge: true }) as Dict;
    const broken = structuredClone(compose);
    dict(dict(broken.services).gateway).restart_policy = 'always';
    dict(dict(dict(broken.services).nats).healthcheck).interval = 5;
    expect((await problems(broken)).join('\n')).toMatch(/restart_policy/);
  });
});

// ---------------------------------------------------------------------------------------------------
// Profiles: compose refuses a project in which an enabled service depends on a service no enabled
// profile starts, unless that dependency says `required: false` (then it is dropped).

/** The services `docker compose --profile …` starts: those without profiles, and those of the profiles. */
function enabled(services: Dict, profiles: string[]): string[] {
  return Object.keys(services).filter((name) => {
    const own = list(dict(services[name]).profiles).map(String);
    return own.length === 0 || own.some((profile) => profiles.includes(profile));
  });
}

/** `service -> dependency` for each required dependency the profiles leave out. */
function missingDependencies(compose: Dict, profiles: string[]): string[] {
  const services = dict(compose.services);
  const on = new Set(enabled(services, profiles));
  return [...on].flatMap((name) => {
    const dependsOn = dict(services[name]).depends_on;
    const entries: [string, Dict][] = Array.isArray(dependsOn)
      ? dependsOn.map((dependency) => [String(dependency), {}])
      : Object.entries(dict(dependsOn)).map(([dependency, how]) => [dependency, dict(how)]);
    return entries
      .filter(([dependency, how]) => !on.has(dependency) && how.required !== false)
      .map(([dependency]) => `${name} -> ${dependency}`);
  });
}

describe('docker-compose.yml profiles', () => {
  const compose = parse(read('docker-compose.yml'), { merge: true }) as Dict;
  const profiles = [
    ...new Set(
      Object.values(dict(compose.services)).flatMap((service) => list(dict(service).profiles).map(String)),
    ),
  ].sort();

  it('has the profiles the header documents, each with its command', () => {
    expect(profiles).toEqual(['dev', 'observability', 'rabbitmq']);
    const header = read('docker-compose.yml')
      .split('\n')
      .filter((line) => line.startsWith('#'))
      .join('\n');
    for (const profile of profiles) {
      expect(header, profile).toMatch(new RegExp(`docker compose --profile ${profile} up --build`));
    }
  });

  const combinations: [string, string[]][] = [
    ['no profile', []],
    ...profiles.map((profile): [string, string[]] => [`--profile ${profile}`, [profile]]),
    ['every profile', profiles],
  ];

  it.each(combinations)('starts with %s without a dependency left out', (_label, active) => {
    expect(missingDependencies(compose, active)).toEqual([]);
  });

  it('starts RabbitMQ only with its profile, and the services wait for it then', () => {
    const services = dict(compose.services);
    expect(enabled(services, [])).not.toContain('rabbitmq');
    expect(enabled(services, ['rabbitmq'])).toContain('rabbitmq');
    // The check itself: the same dependency, required, fails without the profile.
    const strict = structuredClone(compose);
    dict(dict(dict(strict.services).gateway).depends_on).rabbitmq = { condition: 'service_healthy' };
    expect(missingDependencies(strict, [])).toEqual(['gateway -> rabbitmq']);
    expect(missingDependencies(strict, ['rabbitmq'])).toEqual([]);
  });
});

describe('compose interpolation, as this suite does it', () => {
  it('follows compose: nested defaults, read only when used; $$ for a literal $', () => {
    expect(interpolate(`\${A:-\${B:-d}}`, {})).toBe('d');
    expect(interpolate(`\${A:-\${B:-d}}`, { B: 'b' })).toBe('b');
    expect(interpolate(`\${A:-\${B:?needed}}`, { A: 'a' })).toBe('a');
    expect(() => interpolate(`\${A:-\${B:?needed}}`, {})).toThrow(/B is missing: needed/);
    expect(interpolate(`\${A-x}|\${A:-y}|\${A:+z}|\${C+w}`, { A: '', C: '' })).toBe('|y||w');
    expect(interpolate('$$HOME "p$(openssl rand -hex 24)"', {})).toBe('$HOME "p$(openssl rand -hex 24)"');
  });
});
