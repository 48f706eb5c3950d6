// Drift between the deployment files and the services' own config schemas: for each service, the
// variables compose and every Kubernetes overlay set for it (env, plus the keys of the ConfigMaps it takes
// with envFrom, plus the Secret keys it names) must be keys its schema knows (or OpenTelemetry's and
// NODE_ENV), must include every key the schema requires, and, filled in as compose and Kubernetes would,
// must pass the schema. An unknown or a missing variable fails here, not at start-up in production.
import { GatewayConfig } from '@inbox/gateway';
import { MessagingConfig } from '@inbox/messaging';
import { PipelineConfig } from '@inbox/pipeline';
import { ConnectorConfig } from '@inbox/provider-connector';
import { SandboxConfig } from '@inbox/provider-sandbox';
import { DispatcherConfig } from '@inbox/webhook-dispatcher';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import {
  composeEnv,
  containersOf,
  type Dict,
  dict,
  interpolate,
  list,
  nameOf,
  type Rendered,
  read,
  renderAllOverlays,
} from './support.js';

interface ConfigSchema {
  shape: Record<string, { safeParse(value: unknown): { success: boolean } }>;
  safeParse(value: unknown): {
    success: boolean;
    error?: { issues: { path: PropertyKey[]; message: string }[] };
  };
}

const SCHEMAS: Record<string, ConfigSchema> = {
  gateway: GatewayConfig,
  messaging: MessagingConfig,
  'provider-connector': ConnectorConfig,
  pipeline: PipelineConfig,
  'webhook-dispatcher': DispatcherConfig,
  'provider-sandbox': SandboxConfig,
};
/** Read by OpenTelemetry itself (libs/telemetry) and by Node libraries, not by the config schemas. */
const EXTRAS = ['OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_SERVICE_NAME', 'OTEL_SDK_DISABLED', 'NODE_ENV'];

/** Values the Secrets inbox-secrets and nats-<service> would hold, in the shape each schema wants. */
const SECRET_SAMPLES: Record<string, string> = {
  BUS_URL: 'nats://service:p0secret@nats:4222',
  DATABASE_URL: 'postgres://inbox:secret@postgres:5432/inbox',
  ADMIN_TOKEN: 'a'.repeat(32),
  ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64'),
  REDIS_URL: 'redis://redis:6379',
};
/** What a rabbitmq-<service> Secret holds instead (k8s/components/rabbitmq). */
const RABBITMQ_BUS_URL = 'amqp://service:p0secret@rabbitmq:5672';

/** A stand-in for the value of `key` in the Secret `secret`. */
function secretSample(secret: string, key: string): string | undefined {
  if (secret.startsWith('rabbitmq-') && key === 'BUS_URL') return RABBITMQ_BUS_URL;
  return SECRET_SAMPLES[key];
}

const keysOf = (schema: ConfigSchema) => Object.keys(schema.shape);
const requiredOf = (schema: ConfigSchema) =>
  keysOf(schema).filter((key) => !schema.shape[key]!.safeParse(undefined).success);

/** What is wrong with the variables one deployment file sets for a service. */
function drift(service: string, variables: string[]): { unknown: string[]; missing: string[] } {
  const schema = SCHEMAS[service]!;
  const known = new Set([...keysOf(schema), ...EXTRAS]);
  return {
    unknown: variables.filter((name) => !known.has(name)).sort(),
    missing: requiredOf(schema)
      .filter((name) => !variables.includes(name))
      .sort(),
  };
}

function schemaProblems(service: string, env: Record<string, string>): string[] {
  const parsed = SCHEMAS[service]!.safeParse(env);
  return parsed.success ? [] : (parsed.error?.issues ?? []).map((i) => `${i.path.join('.')}: ${i.message}`);
}

/**
 * Settings whose deployed value is meant to differ from the code's default (the connector's URL is the
 * address providers reach it at, which 127.0.0.1 never is in a container).
 */
const DEPLOYMENT_SPECIFIC = new Set(['PUBLIC_CONNECTOR_URL']);

/** The code's default for a setting, as the string an environment would carry; undefined if none. */
function defaultOf(service: string, key: string): string | undefined {
  const field = SCHEMAS[service]!.shape[key];
  const parsed = field?.safeParse(undefined) as { success: boolean; data?: unknown } | undefined;
  return parsed?.success && parsed.data !== undefined ? String(parsed.data) : undefined;
}

/** Defaults written into a deployment file that no longer match the code's (e.g. a changed default). */
function staleDefaults(service: string, values: Record<string, string>): string[] {
  return Object.entries(values)
    .filter(([key]) => !DEPLOYMENT_SPECIFIC.has(key))
    .flatMap(([key, value]) => {
      const fallback = defaultOf(service, key);
      return fallback === undefined || fallback === value
        ? []
        : [`${key}=${value} (the code says ${fallback})`];
    });
}

describe('config drift: the check itself', () => {
  it('reads keys and required keys from the schemas', () => {
    expect(requiredOf(GatewayConfig).sort()).toEqual(['ADMIN_TOKEN', 'BUS_URL', 'DATABASE_URL']);
    expect(requiredOf(DispatcherConfig).sort()).toEqual(['BUS_URL', 'DATABASE_URL', 'ENCRYPTION_KEY']);
    expect(requiredOf(SandboxConfig)).toEqual([]);
    expect(keysOf(DispatcherConfig)).toEqual(
      expect.arrayContaining([
        'WEBHOOK_DISABLE_AFTER_HOURS',
        'WEBHOOK_CONCURRENCY',
        'WEBHOOK_PER_ENDPOINT_CONCURRENCY',
      ]),
    );
  });

  it('finds a default the code has changed', () => {
    expect(staleDefaults('gateway', { RATE_LIMIT_PER_MINUTE: '61', LOG_LEVEL: 'info' })).toEqual([
      'RATE_LIMIT_PER_MINUTE=61 (the code says 60)',
    ]);
  });

  it('fails on an unknown or a missing variable', () => {
    expect(drift('webhook-dispatcher', ['DATABASE_URL', 'BUS_URL', 'WEBHOOK_CONCURENCY'])).toEqual({
      unknown: ['WEBHOOK_CONCURENCY'],
      missing: ['ENCRYPTION_KEY'],
    });
    expect(
      drift('messaging', ['DATABASE_URL', 'BUS_URL', 'RATE_LIMIT_PER_MINUTE', 'OTEL_SERVICE_NAME']),
    ).toEqual({
      unknown: ['RATE_LIMIT_PER_MINUTE'],
      missing: [],
    });
  });
});

describe('config drift: docker-compose.yml', () => {
  const compose = dict(parse(read('docker-compose.yml'), { merge: true }));
  const services = dict(compose.services);
  // Interpolated as `docker compose up` would, with only the two required secrets exported.
  const interpolated = dict(
    parse(
      interpolate(read('docker-compose.yml'), {
        ADMIN_TOKEN: SECRET_SAMPLES.ADMIN_TOKEN,
        ENCRYPTION_KEY: SECRET_SAMPLES.ENCRYPTION_KEY,
      }),
      { merge: true },
    ),
  );

  it.each(Object.keys(SCHEMAS))('%s: sets only known variables and every required one', (service) => {
    expect(services, service).toHaveProperty([service]);
    expect(drift(service, Object.keys(composeEnv(dict(services[service]))))).toEqual({
      unknown: [],
      missing: [],
    });
  });

  it.each(Object.keys(SCHEMAS))('%s: its interpolated environment passes the config schema', (service) => {
    const env = composeEnv(dict(dict(interpolated.services)[service]));
    expect(schemaProblems(service, env)).toEqual([]);
  });

  it.each(Object.keys(SCHEMAS))(
    '%s: its compose fallbacks (VAR:-default) are the code defaults',
    (service) => {
      const fallbacks = Object.fromEntries(
        Object.entries(composeEnv(dict(services[service]))).flatMap(([key, value]) => {
          const match = new RegExp(`^\\$\\{${key}:?-(.*)\\}$`).exec(value);
          return match ? [[key, match[1] ?? '']] : [];
        }),
      );
      expect(staleDefaults(service, fallbacks)).toEqual([]);
    },
  );

  it('needs ADMIN_TOKEN and ENCRYPTION_KEY, and nothing else, from the shell', () => {
    expect(() => interpolate(read('docker-compose.yml'), {})).toThrow(/ADMIN_TOKEN|ENCRYPTION_KEY/);
    expect(() => interpolate(read('docker-compose.yml'), { ADMIN_TOKEN: 'x' })).toThrow(/ENCRYPTION_KEY/);
  });
});

describe('config drift: docker-compose.yml with --profile rabbitmq', () => {
  const text = read('docker-compose.yml');
  // The command the file's header gives for this mode.
  const documented = /^#\s+BUS_URL=(amqp:\/\/\S+) docker compose --profile rabbitmq up --build$/m.exec(text);
  const busUrl = documented?.[1] ?? '';
  const compose = dict(parse(text, { merge: true }));
  const interpolated = dict(
    parse(
      interpolate(text, {
        ADMIN_TOKEN: SECRET_SAMPLES.ADMIN_TOKEN,
        ENCRYPTION_KEY: SECRET_SAMPLES.ENCRYPTION_KEY,
        BUS_URL: busUrl,
      }),
      { merge: true },
    ),
  );

  it('documents the command, with the credentials and address of the rabbitmq service', () => {
    expect(documented, 'BUS_URL=amqp://… docker compose --profile rabbitmq up --build').not.toBeNull();
    const url = new URL(busUrl);
    const rabbitmq = dict(dict(compose.services).rabbitmq);
    const env = composeEnv(rabbitmq);
    expect(url.username).toBe(env.RABBITMQ_DEFAULT_USER);
    // The password the service gets when RABBITMQ_PASSWORD is not set.
    expect(`\${RABBITMQ_PASSWORD:-${url.password}}`).toBe(env.RABBITMQ_DEFAULT_PASS);
    expect(url.hostname).toBe('rabbitmq');
    expect(url.port).toBe('5672');
    expect(rabbitmq.profiles).toEqual(['rabbitmq']);
  });

  it.each(Object.keys(SCHEMAS).filter((s) => s !== 'provider-sandbox'))(
    '%s: is pointed at RabbitMQ, and its environment passes the config schema',
    (service) => {
      const env = composeEnv(dict(dict(interpolated.services)[service]));
      expect(env.BUS_URL).toBe(busUrl);
      expect(schemaProblems(service, env)).toEqual([]);
    },
  );

  it('leaves every service on its own NATS user when BUS_URL is not set', () => {
    const plain = dict(
      parse(
        interpolate(text, {
          ADMIN_TOKEN: SECRET_SAMPLES.ADMIN_TOKEN,
          ENCRYPTION_KEY: SECRET_SAMPLES.ENCRYPTION_KEY,
        }),
        { merge: true },
      ),
    );
    for (const service of Object.keys(SCHEMAS).filter((s) => s !== 'provider-sandbox')) {
      expect(composeEnv(dict(dict(plain.services)[service])).BUS_URL, service).toMatch(
        new RegExp(`^nats://${service}:local[a-z]+@nats:4222$`),
      );
    }
  });
});

describe('config drift: Kubernetes overlays', () => {
  /** A container's environment as the kubelet builds it; Secret values are stand-ins. */
  function containerEnv(overlay: Rendered, container: Dict): Record<string, string> {
    const configMaps = new Map(overlay.docs.filter((d) => d.kind === 'ConfigMap').map((d) => [nameOf(d), d]));
    const env: Record<string, string> = {};
    for (const source of list(container.envFrom).map(dict)) {
      const ref = dict(source.configMapRef);
      if (source.secretRef !== undefined) throw new Error('envFrom secretRef: its keys cannot be checked');
      const data = dict(configMaps.get(String(ref.name))?.data);
      if (Object.keys(data).length === 0 && ref.optional !== true) {
        throw new Error(`ConfigMap ${String(ref.name)} is missing or empty in ${overlay.name}`);
      }
      for (const [key, value] of Object.entries(data))
        env[`${String(source.prefix ?? '')}${key}`] = String(value);
    }
    for (const entry of list(container.env).map(dict)) {
      const name = String(entry.name);
      const from = dict(entry.valueFrom);
      if (from.secretKeyRef) {
        const key = String(dict(from.secretKeyRef).key);
        const value = secretSample(String(dict(from.secretKeyRef).name), key);
        expect(value, `${overlay.name}: Secret key ${key}`).toBeDefined();
        env[name] = value!;
      } else if (from.configMapKeyRef) {
        const ref = dict(from.configMapKeyRef);
        env[name] = String(dict(configMaps.get(String(ref.name))?.data)[String(ref.key)]);
      } else {
        env[name] = String(entry.value ?? '');
      }
    }
    return env;
  }

  it('every overlay: each service container sets only known variables and every required one', () => {
    const overlays = renderAllOverlays();
    let checked = 0;
    for (const overlay of overlays) {
      for (const deployment of overlay.docs.filter((d) => d.kind === 'Deployment')) {
        const service = nameOf(deployment);
        if (!(service in SCHEMAS)) continue;
        const env = containerEnv(overlay, containersOf(deployment)[0] ?? {});
        expect(drift(service, Object.keys(env)), `${overlay.name} ${service}`).toEqual({
          unknown: [],
          missing: [],
        });
        expect(schemaProblems(service, env), `${overlay.name} ${service}`).toEqual([]);
        if (overlay.bus === 'rabbitmq' && service !== 'provider-sandbox') {
          expect(env.BUS_URL, `${overlay.name} ${service}`).toBe(RABBITMQ_BUS_URL);
        }
        // The base states the code's defaults; overlays may change them.
        if (overlay.name === 'k8s/base') expect(staleDefaults(service, env), service).toEqual([]);
        checked++;
      }
    }
    // Five services in every rendering, and the sandbox in those of dev.
    const devs = overlays.filter((overlay) => overlay.name.startsWith('k8s/overlays/dev')).length;
    expect(devs).toBe(2);
    expect(checked).toBe(5 * overlays.length + devs);
  });

  it('production: neither the connector nor the dispatcher may reach a private range', () => {
    const production = renderAllOverlays().filter((o) => o.name.startsWith('k8s/overlays/production'));
    const outbound = ['provider-connector', 'webhook-dispatcher'];
    let checked = 0;
    for (const overlay of production) {
      for (const deployment of overlay.docs.filter((d) => d.kind === 'Deployment')) {
        if (!outbound.includes(nameOf(deployment))) continue;
        const env = containerEnv(overlay, containersOf(deployment)[0] ?? {});
        const where = `${overlay.name} ${nameOf(deployment)}`;
        expect(env.OUTBOUND_ALLOWED_CIDRS, where).toBe('');
        expect(env.WEBHOOK_ALLOWED_CIDRS ?? '', where).toBe('');
        checked++;
      }
    }
    expect(checked).toBe(production.length * outbound.length);
  });
});
