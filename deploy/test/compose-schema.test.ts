// docker-compose.yml against the Compose Specification's JSON schema (compose-spec/compose-spec's
// schema/compose-spec.json, as the dclint package ships it), with ajv: the file as written and as
// `docker compose` sees it after variable interpolation.

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

  it('rejects what the specification does not allow (the validator is really at work)', async () => {
    const compose = parse(read('docker-compose.yml'), { merge: true }) as Dict;
    const broken = structuredClone(compose);
    dict(dict(broken.services).gateway).restart_policy = 'always';
    dict(dict(dict(broken.services).nats).healthcheck).interval = 5;
    expect((await problems(broken)).join('\n')).toMatch(/restart_policy/);
  });
});
