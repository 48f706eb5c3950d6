// Static checks of the deployment artefacts: deploy/Dockerfile, .dockerignore, docker-compose.yml and
// the Kustomize tree under k8s/. No Docker engine or cluster is needed: the files are read and parsed,
// and compared with the services' contract (ports, environment, probes) hard-coded below.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stopGraceMs } from '@inbox/service-kit';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';

const root = fileURLToPath(new URL('../..', import.meta.url));
const read = (path: string): string => readFileSync(join(root, path), 'utf8');

/** The password variables deploy/nats/nats-server.conf reads: one per NATS user. */
const natsPasswordVariables = (): string[] =>
  [...read('deploy/nats/nats-server.conf').matchAll(/password: \$(NATS_[A-Z_]+_PASSWORD)/g)].map(
    (m) => m[1]!,
  );

// ---------------------------------------------------------------------------------------------------
// The contract: each deployed service, the variable that sets its port, the port, and what it needs.

interface ServiceContract {
  portVar: string;
  port: number;
  /** Variables the service cannot start without (secrets are checked separately). */
  needs: string[];
  secrets: string[];
}

const SERVICES: Record<string, ServiceContract> = {
  gateway: {
    portVar: 'GATEWAY_PORT',
    port: 8080,
    needs: ['DATABASE_URL', 'BUS_URL', 'REDIS_URL'],
    secrets: ['ADMIN_TOKEN'],
  },
  messaging: { portVar: 'MESSAGING_PORT', port: 8082, needs: ['DATABASE_URL', 'BUS_URL'], secrets: [] },
  'provider-connector': {
    portVar: 'CONNECTOR_PORT',
    port: 8081,
    needs: ['DATABASE_URL', 'BUS_URL'],
    secrets: ['ENCRYPTION_KEY'],
  },
  pipeline: { portVar: 'PIPELINE_PORT', port: 8083, needs: ['DATABASE_URL', 'BUS_URL'], secrets: [] },
  'webhook-dispatcher': {
    portVar: 'DISPATCHER_PORT',
    port: 8084,
    needs: ['DATABASE_URL', 'BUS_URL'],
    secrets: ['ENCRYPTION_KEY'],
  },
};
const SANDBOX = { name: 'provider-sandbox', portVar: 'SANDBOX_PORT', port: 8090 };
const SERVICE_NAMES = Object.keys(SERVICES);
const AUTOSCALED = ['provider-connector', 'webhook-dispatcher'];
const SECRET_KEYS = ['DATABASE_URL', 'ADMIN_TOKEN', 'ENCRYPTION_KEY', 'REDIS_URL'];
const RUN_AS_USER = 10001;

// ---------------------------------------------------------------------------------------------------
// Small typed views of the parsed YAML.

type Dict = Record<string, unknown>;
const isDict = (value: unknown): value is Dict =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const dict = (value: unknown): Dict => (isDict(value) ? value : {});
const list = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);

/** Compose `environment` as a map, whichever of its two spellings (map or KEY=value list) is used. */
function composeEnv(service: Dict): Record<string, string> {
  const environment = service.environment;
  if (Array.isArray(environment)) {
    return Object.fromEntries(
      environment.map((entry) => {
        const [key, ...rest] = String(entry).split('=');
        return [key, rest.join('=')];
      }),
    );
  }
  return Object.fromEntries(Object.entries(dict(environment)).map(([key, value]) => [key, String(value)]));
}

function walkYaml(directory: string): string[] {
  return readdirSync(directory).flatMap((entry) => {
    const path = join(directory, entry);
    if (statSync(path).isDirectory()) return walkYaml(path);
    return /\.ya?ml$/.test(entry) ? [path] : [];
  });
}

interface Manifest {
  file: string;
  doc: Dict;
}

const k8sRoot = join(root, 'k8s');
const k8sFiles = existsSync(k8sRoot) ? walkYaml(k8sRoot) : [];
/** Files a kustomization applies as patches (e.g. components/rabbitmq/bus-url.yaml): fragments, not objects. */
const patchFiles = new Set(
  k8sFiles
    .filter((file) => file.endsWith('kustomization.yaml'))
    .flatMap((file) =>
      list(dict(parse(readFileSync(file, 'utf8'))).patches)
        .map((patch) => dict(patch).path)
        .filter((path): path is string => typeof path === 'string')
        .map((path) => join(dirname(file), path)),
    ),
);
const manifests: Manifest[] = k8sFiles
  .filter((file) => !patchFiles.has(file))
  .flatMap((file) =>
    parseAllDocuments(readFileSync(file, 'utf8'))
      .map((document) => document.toJS() as unknown)
      .filter(isDict)
      .map((doc) => ({ file: relative(root, file), doc })),
  );
const kindOf = (kind: string, under = 'k8s/') =>
  manifests.filter((m) => m.doc.kind === kind && m.file.startsWith(under));
const nameOf = (doc: Dict): string => String(dict(doc.metadata).name);
const podSpec = (deployment: Dict): Dict => dict(dict(dict(deployment.spec).template).spec);
const firstContainer = (deployment: Dict): Dict => dict(list(podSpec(deployment).containers)[0]);

function probePort(probe: unknown): unknown {
  return dict(dict(probe).httpGet).port;
}

/** A probe's port resolved against the container's ports (it may name one). */
function resolvePort(container: Dict, port: unknown): number | undefined {
  if (typeof port === 'number') return port;
  const named = list(container.ports)
    .map(dict)
    .find((p) => p.name === port);
  return typeof named?.containerPort === 'number' ? named.containerPort : undefined;
}

// ---------------------------------------------------------------------------------------------------

describe('deploy/Dockerfile', () => {
  const dockerfile = read('deploy/Dockerfile');
  const instructions = dockerfile
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith('#'));

  it('is one multi-stage file parameterised by ARG SERVICE on node:24-bookworm-slim', () => {
    expect(instructions).toContain('ARG SERVICE');
    expect(dockerfile).toMatch(/node:24-bookworm-slim/);
    expect(instructions.filter((line) => line.startsWith('FROM ')).length).toBeGreaterThanOrEqual(2);
  });

  // The npm steps are in deploy/image-steps.sh (which image-build.test.ts also runs); the Dockerfile calls
  // one step per stage. Comments do not count: only the commands that run.
  const steps = read('deploy/image-steps.sh')
    .split('\n')
    .filter((line) => !line.trim().startsWith('#'))
    .join('\n');
  const runs = instructions.filter((line) => line.startsWith('RUN ')).join('\n');

  it('builds with turbo for the service and installs only its production dependencies', () => {
    expect(steps).toMatch(/^\s*npm ci$/m);
    expect(steps).toMatch(/turbo run build --filter="@inbox\/\$\{service\}\.\.\."/);
    expect(steps).toMatch(
      /npm ci --omit=dev --workspace="services\/\$\{service\}" --include-workspace-root=false/,
    );
    for (const step of ['manifests', 'install', 'build', 'prod-install', 'prune']) {
      expect(runs).toMatch(new RegExp(`image-steps\\.sh ${step}\\b`));
    }
    expect(runs).toMatch(/image-steps\.sh build "\$\{SERVICE\}"/);
    expect(runs).toMatch(/image-steps\.sh prod-install "\$\{SERVICE\}"/);
  });

  it("ships the service's migrations, which it reads at run time from ../migrations", () => {
    expect(steps).toMatch(
      /cp -R "services\/\$service\/migrations\/\." "\$out\/services\/\$service\/migrations\/"/,
    );
    expect(dockerfile).toMatch(
      /COPY --from=prod-deps \/repo\/services\/\$\{SERVICE\} \/app\/services\/\$\{SERVICE\}/,
    );
  });

  it('runs as a non-root user under tini, with NODE_ENV=production and a HEALTHCHECK on /healthz', () => {
    const users = instructions.filter((line) => line.startsWith('USER '));
    expect(users.length).toBeGreaterThan(0);
    const lastUser = users.at(-1)!.slice('USER '.length).split(':')[0];
    expect(['root', '0']).not.toContain(lastUser);
    expect(lastUser).toBe(String(RUN_AS_USER));
    expect(dockerfile).toMatch(/apt-get install[^\n]*\btini\b/);
    expect(instructions).toContain('ENTRYPOINT ["tini", "--"]');
    expect(dockerfile).toMatch(/NODE_ENV=production/);
    const healthcheck = instructions.find((line) => line.startsWith('HEALTHCHECK'));
    expect(healthcheck).toMatch(/fetch\(/);
    expect(healthcheck).toMatch(/\/healthz/);
    expect(healthcheck).toMatch(/127\.0\.0\.1/);
  });

  it("knows every service's default port for its HEALTHCHECK", () => {
    const healthcheck = instructions.find((line) => line.startsWith('HEALTHCHECK')) ?? '';
    for (const [name, contract] of Object.entries(SERVICES)) {
      expect(healthcheck).toMatch(new RegExp(`'?${name}'?:${contract.port}\\b`));
    }
    expect(healthcheck).toMatch(new RegExp(`'${SANDBOX.name}':${SANDBOX.port}\\b`));
  });

  it("sets the young generation's semi-spaces to 8 MiB through NODE_OPTIONS, which Node accepts", () => {
    const env = instructions.find((line) => line.startsWith('ENV ') && line.includes('NODE_OPTIONS='));
    const value = /NODE_OPTIONS=(\S+)/.exec(env ?? '')?.[1];
    expect(value).toBe('--max-semi-space-size=8');
    // Node refuses a flag NODE_OPTIONS may not carry (exit 9); the heap's limit, which counts the young
    // generation, shows the flag takes effect.
    const heapLimit = (nodeOptions: string) =>
      execFileSync(process.execPath, ['-p', 'require("node:v8").getHeapStatistics().heap_size_limit'], {
        env: { ...process.env, NODE_OPTIONS: nodeOptions },
        encoding: 'utf8',
      }).trim();
    expect(heapLimit(value!)).not.toBe(heapLimit('--max-semi-space-size=32'));
  });

  it("runs the services on jemalloc: installed from Debian's packages, preloaded from one path, with options jemalloc reads", () => {
    const env = (name: string) =>
      new RegExp(`${name}=(\\S+)`).exec(
        instructions.find((line) => line.startsWith('ENV ') && line.includes(`${name}=`)) ?? '',
      )?.[1];
    expect(dockerfile).toMatch(/apt-get install[^\n]*\blibjemalloc2\b/);
    // The package puts the library under the architecture's directory; the link is the one path LD_PRELOAD names.
    const link = /ln -s \/usr\/lib\/\*\/libjemalloc\.so\.2 (\S+)/.exec(dockerfile)?.[1];
    expect(link).toBe('/usr/local/lib/libjemalloc.so.2');
    // A glob that matched nothing would leave a dangling link: the build checks it leads somewhere.
    expect(dockerfile).toContain(`ln -s /usr/lib/*/libjemalloc.so.2 ${link} \\\n && test -e ${link} `);
    expect(env('LD_PRELOAD')).toBe(link);
    // jemalloc names a pair it does not know on stderr and ignores it: each must be one of its options,
    // with a value of the option's kind.
    const options: Record<string, RegExp> = {
      background_thread: /^(true|false)$/,
      dirty_decay_ms: /^-?\d+$/,
      muzzy_decay_ms: /^-?\d+$/,
      narenas: /^[1-9]\d*$/,
    };
    const pairs = (env('MALLOC_CONF') ?? '').split(',').map((pair) => pair.split(':'));
    expect(pairs.map(([name]) => name)).toEqual([
      'background_thread',
      'dirty_decay_ms',
      'muzzy_decay_ms',
      'narenas',
    ]);
    for (const [name, value] of pairs) expect(value).toMatch(options[name!]!);
    // Debian's package, on a Debian base: an Alpine (musl) image has neither.
    expect(dockerfile).toMatch(/^ARG NODE_IMAGE=node:\d+-(bookworm|bullseye|trixie)(-slim)?$/m);
    expect(dockerfile).not.toMatch(/MALLOC_ARENA_MAX/);
  });

  it('starts dist/main.js with OpenTelemetry registered first, from the service directory', () => {
    expect(instructions).toContain('CMD ["node", "--import", "@inbox/telemetry/register", "dist/main.js"]');
    expect(instructions.some((line) => /^WORKDIR \S*services\/\$\{SERVICE\}$/.test(line))).toBe(true);
  });

  it('has a .dockerignore that keeps build output, dependencies and VCS data out of the context', () => {
    const ignored = read('.dockerignore')
      .split('\n')
      .map((line) => line.trim().replace(/^\*\*\//, ''));
    for (const pattern of ['node_modules', 'dist', '.git', '.turbo', 'coverage', '*.log']) {
      expect(ignored).toContain(pattern);
    }
  });
});

describe('docker-compose.yml', () => {
  const compose = dict(parse(read('docker-compose.yml'), { merge: true }));
  const services = dict(compose.services);
  const service = (name: string): Dict => dict(services[name]);

  it('parses and has the infrastructure and the five services', () => {
    for (const name of ['nats', 'postgres', 'redis', ...SERVICE_NAMES, SANDBOX.name]) {
      expect(services, name).toHaveProperty([name]);
    }
  });

  it('runs NATS with JetStream on a volume and healthchecks all infrastructure', () => {
    const nats = service('nats');
    expect(nats.image).toBe('nats:2.10-alpine');
    expect(list(nats.command).map(String)).toEqual(expect.arrayContaining(['-js', '-sd', '/data', '-m']));
    expect(list(nats.volumes).some((v) => String(v).endsWith(':/data'))).toBe(true);
    expect(JSON.stringify(dict(nats.healthcheck).test)).toMatch(/8222\/healthz/);
    // The users and permissions of deploy/nats/nats-server.conf (deploy/test/nats-permissions.test.ts).
    expect(list(nats.command).map(String)).toEqual(
      expect.arrayContaining(['-c', '/etc/nats/nats-server.conf']),
    );
    expect(list(nats.volumes)).toContain('./deploy/nats/nats-server.conf:/etc/nats/nats-server.conf:ro');
    // The server refuses to start when a password variable the file reads is missing.
    for (const variable of natsPasswordVariables()) expect(composeEnv(nats)[variable], variable).toBeTruthy();

    const postgres = service('postgres');
    expect(postgres.image).toBe('postgres:16-alpine');
    expect(composeEnv(postgres).POSTGRES_DB).toBe('inbox');
    expect(list(postgres.volumes).length).toBeGreaterThan(0);
    expect(JSON.stringify(dict(postgres.healthcheck).test)).toMatch(/pg_isready/);

    const redis = service('redis');
    expect(redis.image).toBe('redis:7-alpine');
    expect(JSON.stringify(dict(redis.healthcheck).test)).toMatch(/redis-cli.*ping/);
  });

  it('builds every service from deploy/Dockerfile with SERVICE naming an existing services/<name>', () => {
    expect(existsSync(join(root, 'deploy/Dockerfile'))).toBe(true);
    for (const name of [...SERVICE_NAMES, SANDBOX.name]) {
      const build = dict(service(name).build);
      expect(build.dockerfile, name).toBe('deploy/Dockerfile');
      expect(build.context ?? '.', name).toBe('.');
      const args = dict(build.args);
      expect(args.SERVICE, name).toBe(name);
      expect(existsSync(join(root, 'services', String(args.SERVICE), 'package.json')), name).toBe(true);
    }
  });

  it("sets each service's port and the connection settings it needs", () => {
    for (const [name, contract] of Object.entries(SERVICES)) {
      const env = composeEnv(service(name));
      expect(env[contract.portVar], name).toBe(String(contract.port));
      expect(dict(dict(service(name).build).args).PORT, name).toBe(String(contract.port));
      for (const variable of contract.needs) expect(env[variable], `${name} ${variable}`).toBeTruthy();
      // Its own NATS user, with the password the nats service reads for that user, unless BUS_URL
      // names another broker for all of them (the profile rabbitmq).
      const password = `NATS_${name.toUpperCase().replaceAll('-', '_')}_PASSWORD`;
      expect(env.BUS_URL, name).toMatch(
        new RegExp(`^\\$\\{BUS_URL:-nats://${name}:\\$\\{${password}:-[a-z0-9]+\\}@nats:4222\\}$`),
      );
      expect(composeEnv(service('nats'))[password], name).toBe(/:(\$\{[^}]+\})@/.exec(env.BUS_URL!)?.[1]);
      expect(env.DATABASE_URL).toMatch(/^postgres(ql)?:\/\/[^@]+@postgres:5432\/inbox$/);
      expect(env.OTEL_SERVICE_NAME).toBe(name);
    }
    expect(composeEnv(service('gateway')).REDIS_URL).toBe('redis://redis:6379');
    // Nothing private is reachable unless the operator says so, for webhooks and providers alike.
    for (const name of ['webhook-dispatcher', 'provider-connector']) {
      expect(composeEnv(service(name)).OUTBOUND_ALLOWED_CIDRS, name).toMatch(
        /^(|\$\{OUTBOUND_ALLOWED_CIDRS:?-\})$/,
      );
    }
    expect(composeEnv(service(SANDBOX.name))[SANDBOX.portVar]).toBe(String(SANDBOX.port));
  });

  it('takes secrets only from the environment, never as literal values', () => {
    for (const [name, contract] of Object.entries(SERVICES)) {
      const env = composeEnv(service(name));
      for (const secret of contract.secrets) {
        expect(env[secret], `${name} ${secret}`).toMatch(new RegExp(`^\\$\\{${secret}:\\?[^}]*\\}$`));
      }
    }
    for (const name of Object.keys(services)) {
      const env = composeEnv(service(name));
      for (const secret of ['ADMIN_TOKEN', 'ENCRYPTION_KEY']) {
        if (secret in env) expect(env[secret], `${name} ${secret}`).toMatch(/^\$\{[A-Z_]+(:?[?-][^}]*)?\}$/);
      }
    }
  });

  it('waits for healthy infrastructure before starting a service, and for RabbitMQ when its profile is on', () => {
    for (const [name, contract] of Object.entries(SERVICES)) {
      const dependsOn = dict(service(name).depends_on);
      const wanted = ['nats', 'postgres', ...(contract.needs.includes('REDIS_URL') ? ['redis'] : [])];
      for (const infra of wanted) {
        expect(dict(dependsOn[infra]).condition, `${name} -> ${infra}`).toBe('service_healthy');
        expect(dict(dependsOn[infra]).required ?? true, `${name} -> ${infra}`).toBe(true);
      }
      // Without the profile the rabbitmq service does not exist; an optional dependency is then dropped.
      expect(dict(dependsOn.rabbitmq), name).toEqual({ condition: 'service_healthy', required: false });
    }
  });

  it('runs RabbitMQ only with the profile rabbitmq, on a volume under a fixed node name, healthchecked', () => {
    const rabbitmq = service('rabbitmq');
    expect(rabbitmq.profiles).toEqual(['rabbitmq']);
    expect(String(rabbitmq.image)).toMatch(/^rabbitmq:\d+\.\d+-management-alpine$/);
    // The node is rabbit@<hostname> and names its data directory after it.
    expect(rabbitmq.hostname).toBe('rabbitmq');
    const data = list(rabbitmq.volumes)
      .map(String)
      .find((volume) => volume.endsWith(':/var/lib/rabbitmq'));
    expect(data).toBeDefined();
    expect(dict(compose.volumes)).toHaveProperty([String(data).split(':')[0]!]);
    expect(JSON.stringify(dict(rabbitmq.healthcheck).test)).toMatch(/rabbitmq-diagnostics/);
    // Its password from the environment, with a local-only default, as the NATS passwords.
    expect(composeEnv(rabbitmq).RABBITMQ_DEFAULT_PASS).toMatch(/^\$\{RABBITMQ_PASSWORD:-[a-z0-9]+\}$/);
    // Its schedulers unbound: bound to cores it shares with the services, one waits for its busy core.
    expect(composeEnv(rabbitmq).RABBITMQ_SCHEDULER_BIND_TYPE).toBe('u');
    // AMQP stays on the compose network; the management UI is published on the loopback interface only.
    expect(list(rabbitmq.ports).map(String)).toEqual(['127.0.0.1:15672:15672']);
  });

  it('runs the services read-only with a tmpfs /tmp', () => {
    for (const name of [...SERVICE_NAMES, SANDBOX.name]) {
      expect(service(name).read_only, name).toBe(true);
      expect(list(service(name).tmpfs).map(String), name).toContain('/tmp');
    }
  });

  it('publishes the gateway, the connector and (dev) the sandbox on the host ports the settings name', () => {
    const published = (name: string) => list(service(name).ports).map(String);
    expect(published('gateway')).toEqual([`\${GATEWAY_PORT:-8080}:8080`]);
    expect(published('provider-connector')).toEqual([`\${CONNECTOR_PORT:-8081}:8081`]);
    expect(published(SANDBOX.name)).toEqual([`\${SANDBOX_PORT:-8090}:8090`]);
    for (const name of ['messaging', 'pipeline', 'webhook-dispatcher']) expect(published(name)).toEqual([]);
  });

  it('starts the provider sandbox only with the dev profile', () => {
    expect(service(SANDBOX.name).profiles).toEqual(['dev']);
    expect(service('rabbitmq').profiles).toEqual(['rabbitmq']);
    for (const name of ['nats', 'postgres', 'redis', ...SERVICE_NAMES]) {
      expect(service(name).profiles, name).toBeUndefined();
    }
  });
});

describe('k8s/', () => {
  it('has YAML files, every one of which parses', () => {
    expect(k8sFiles.length).toBeGreaterThan(0);
    for (const file of k8sFiles) {
      for (const document of parseAllDocuments(readFileSync(file, 'utf8'))) {
        expect(document.errors, relative(root, file)).toEqual([]);
      }
    }
  });

  it('lists only resources that exist, in every kustomization.yaml', () => {
    const kustomizations = k8sFiles.filter((file) => file.endsWith('kustomization.yaml'));
    expect(kustomizations.map((file) => relative(root, file)).sort()).toEqual(
      expect.arrayContaining([
        'k8s/base/kustomization.yaml',
        'k8s/overlays/dev/kustomization.yaml',
        'k8s/overlays/production/kustomization.yaml',
      ]),
    );
    for (const file of kustomizations) {
      const kustomization = dict(parse(readFileSync(file, 'utf8')));
      const resources = list(kustomization.resources).map(String);
      // A component may consist of another component and its patches (components/keda-rabbitmq).
      const components = list(kustomization.components).map(String);
      expect(resources.length + components.length, relative(root, file)).toBeGreaterThan(0);
      for (const component of components) {
        expect(existsSync(join(dirname(file), component, 'kustomization.yaml')), component).toBe(true);
      }
      for (const resource of resources) {
        const path = join(dirname(file), resource);
        expect(existsSync(path), `${relative(root, file)}: ${resource}`).toBe(true);
        if (statSync(path).isDirectory()) expect(existsSync(join(path, 'kustomization.yaml'))).toBe(true);
      }
    }
  });

  it('commits no Secret with values', () => {
    for (const { file, doc } of kindOf('Secret')) {
      expect(doc.data, file).toBeUndefined();
      expect(doc.stringData, file).toBeUndefined();
    }
    for (const file of k8sFiles.filter((f) => f.endsWith('kustomization.yaml'))) {
      const kustomization = dict(parse(readFileSync(file, 'utf8')));
      expect(kustomization.secretGenerator, relative(root, file)).toBeUndefined();
    }
  });

  describe('base', () => {
    const deployments = kindOf('Deployment', 'k8s/base/');
    const deployment = (name: string): Dict => deployments.find((m) => nameOf(m.doc) === name)?.doc ?? {};

    it('has a Deployment, Service and PodDisruptionBudget for each of the five services', () => {
      expect(deployments.map((m) => nameOf(m.doc)).sort()).toEqual([...SERVICE_NAMES].sort());
      for (const name of SERVICE_NAMES) {
        const service = kindOf('Service', 'k8s/base/').find((m) => nameOf(m.doc) === name);
        expect(service, name).toBeDefined();
        const port = dict(list(dict(service?.doc.spec).ports)[0]);
        expect(port.port, name).toBe(SERVICES[name]!.port);
        const pdb = kindOf('PodDisruptionBudget', 'k8s/base/').find((m) => nameOf(m.doc) === name);
        expect(pdb?.doc.apiVersion, name).toBe('policy/v1');
        expect(dict(pdb?.doc.spec).minAvailable, name).toBe(1);
        expect(dict(dict(pdb?.doc.spec).selector)).toEqual(dict(dict(deployment(name).spec).selector));
      }
    });

    it('runs the placeholder image of each service with its port set explicitly', () => {
      for (const [name, contract] of Object.entries(SERVICES)) {
        const container = firstContainer(deployment(name));
        expect(container.image).toBe(`ghcr.io/inbox-platform/${name}:latest`);
        const ports = list(container.ports).map(dict);
        expect(
          ports.map((p) => p.containerPort),
          name,
        ).toContain(contract.port);
        const env = list(container.env).map(dict);
        expect(env.find((e) => e.name === contract.portVar)?.value, name).toBe(String(contract.port));
      }
    });

    it('probes /healthz (liveness) and /readyz (readiness) on the container port', () => {
      for (const [name, contract] of Object.entries(SERVICES)) {
        const container = firstContainer(deployment(name));
        const liveness = dict(dict(container.livenessProbe).httpGet);
        const readiness = dict(dict(container.readinessProbe).httpGet);
        expect(liveness.path, name).toBe('/healthz');
        expect(readiness.path, name).toBe('/readyz');
        for (const probe of [container.livenessProbe, container.readinessProbe, container.startupProbe]) {
          if (probe === undefined) continue;
          expect(resolvePort(container, probePort(probe)), name).toBe(contract.port);
        }
      }
    });

    it('sets requests and limits, a grace period longer than the SIGTERM drain, and an emptyDir at /tmp', () => {
      for (const name of SERVICE_NAMES) {
        const spec = podSpec(deployment(name));
        const container = firstContainer(deployment(name));
        const resources = dict(container.resources);
        for (const bound of ['requests', 'limits']) {
          expect(dict(resources[bound]).cpu, `${name} ${bound}`).toBeDefined();
          expect(dict(resources[bound]).memory, `${name} ${bound}`).toBeDefined();
        }
        expect(Number(spec.terminationGracePeriodSeconds), name).toBeGreaterThan(stopGraceMs / 1000 + 5);
        const mount = list(container.volumeMounts)
          .map(dict)
          .find((m) => m.mountPath === '/tmp');
        expect(mount, name).toBeDefined();
        const volume = list(spec.volumes)
          .map(dict)
          .find((v) => v.name === mount?.name);
        expect(volume?.emptyDir, name).toBeDefined();
      }
    });

    it('reads settings from the inbox-config ConfigMap and secrets from inbox-secrets', () => {
      for (const [name, contract] of Object.entries(SERVICES)) {
        const container = firstContainer(deployment(name));
        const fromConfig = list(container.envFrom).map((e) => dict(dict(e).configMapRef).name);
        expect(fromConfig, name).toContain('inbox-config');
        const env = list(container.env).map(dict);
        const expectedSecrets = [
          ...contract.secrets,
          ...contract.needs.filter((v) => SECRET_KEYS.includes(v)),
        ];
        for (const key of expectedSecrets) {
          const ref = dict(dict(env.find((e) => e.name === key)?.valueFrom).secretKeyRef);
          expect(ref, `${name} ${key}`).toEqual(expect.objectContaining({ name: 'inbox-secrets', key }));
        }
        for (const entry of env) {
          if (SECRET_KEYS.includes(String(entry.name)))
            expect(entry.value, `${name} ${entry.name}`).toBeUndefined();
        }
        // Its own NATS user: the URL carries the password, so it comes from the service's own Secret.
        const nats = dict(dict(env.find((e) => e.name === 'BUS_URL')?.valueFrom).secretKeyRef);
        expect(nats, name).toEqual({ name: `nats-${name}`, key: 'BUS_URL' });
      }
      const kustomization = dict(parse(read('k8s/base/kustomization.yaml')));
      const generated = list(kustomization.configMapGenerator).map(dict);
      const keysOf = (name: string) =>
        list(generated.find((g) => g.name === name)?.literals).map((l) => String(l).split('=')[0]);
      // What every service reads in inbox-config; each service's own keys in <service>-config.
      expect(keysOf('inbox-config').sort()).toEqual(['BUS_PREFIX', 'LOG_LEVEL']);
      for (const name of ['gateway', 'provider-connector', 'webhook-dispatcher']) {
        expect(keysOf(`${name}-config`).length, name).toBeGreaterThan(0);
        const fromConfig = list(firstContainer(deployment(name)).envFrom).map(
          (e) => dict(dict(e).configMapRef).name,
        );
        expect(fromConfig, name).toContain(`${name}-config`);
      }
      for (const { name } of generated) {
        for (const secret of [...SECRET_KEYS, 'BUS_URL'])
          expect(keysOf(String(name)), String(name)).not.toContain(secret);
      }
    });

    it('autoscales provider-connector and webhook-dispatcher on CPU at 70%', () => {
      const hpas = kindOf('HorizontalPodAutoscaler', 'k8s/base/');
      expect(hpas.map((m) => nameOf(m.doc)).sort()).toEqual([...AUTOSCALED].sort());
      for (const { doc } of hpas) {
        expect(doc.apiVersion).toBe('autoscaling/v2');
        const spec = dict(doc.spec);
        expect(dict(spec.scaleTargetRef)).toEqual(
          expect.objectContaining({ kind: 'Deployment', name: nameOf(doc) }),
        );
        const cpu = list(spec.metrics)
          .map((m) => dict(dict(m).resource))
          .find((r) => r.name === 'cpu');
        expect(dict(cpu?.target)).toEqual(
          expect.objectContaining({ type: 'Utilization', averageUtilization: 70 }),
        );
        // The autoscaler owns the count; a fixed replicas field would fight it on every apply.
        expect(dict(deployment(nameOf(doc)).spec).replicas).toBeUndefined();
      }
    });
  });

  describe('every Deployment', () => {
    const all = kindOf('Deployment');

    it('has liveness and readiness probes, resources and a hardened securityContext', () => {
      expect(all.length).toBeGreaterThanOrEqual(SERVICE_NAMES.length);
      for (const { file, doc } of all) {
        const where = `${file} ${nameOf(doc)}`;
        const spec = podSpec(doc);
        for (const container of list(spec.containers).map(dict)) {
          expect(container.livenessProbe, where).toBeDefined();
          expect(container.readinessProbe, where).toBeDefined();
          for (const probe of [container.livenessProbe, container.readinessProbe]) {
            const port = probePort(probe);
            if (port !== undefined) expect(resolvePort(container, port), where).toBeDefined();
          }
          expect(dict(dict(container.resources).requests), where).not.toEqual({});
          expect(dict(dict(container.resources).limits), where).not.toEqual({});

          // The container's settings win over the pod's.
          const pod = dict(spec.securityContext);
          const own = dict(container.securityContext);
          const effective = { ...pod, ...own };
          expect(effective.runAsNonRoot, where).toBe(true);
          expect(effective.allowPrivilegeEscalation, where).toBe(false);
          expect(list(dict(own.capabilities).drop), where).toContain('ALL');
          expect(dict(effective.seccompProfile).type, where).toBe('RuntimeDefault');
        }
      }
    });

    it('runs the services as uid 10001 with a read-only root filesystem', () => {
      const ours = all.filter(({ doc }) =>
        String(firstContainer(doc).image).startsWith('ghcr.io/inbox-platform/'),
      );
      expect(ours.length).toBeGreaterThanOrEqual(SERVICE_NAMES.length);
      for (const { file, doc } of ours) {
        const where = `${file} ${nameOf(doc)}`;
        const effective = {
          ...dict(podSpec(doc).securityContext),
          ...dict(firstContainer(doc).securityContext),
        };
        expect(effective.runAsUser, where).toBe(RUN_AS_USER);
        expect(effective.readOnlyRootFilesystem, where).toBe(true);
      }
    });
  });

  describe('overlays', () => {
    const overlay = (name: string): Dict => dict(parse(read(`k8s/overlays/${name}/kustomization.yaml`)));

    it('dev: namespace inbox-dev with in-cluster NATS (JetStream), Postgres, Redis and the sandbox', () => {
      const dev = overlay('dev');
      expect(dev.namespace ?? dev.namePrefix).toMatch(/inbox-dev/);
      expect(list(dev.resources)).toContain('../../base');
      const names = kindOf('Deployment', 'k8s/overlays/dev/').map((m) => nameOf(m.doc));
      expect(names).toEqual(expect.arrayContaining(['nats', 'postgres', 'redis', SANDBOX.name]));
      const nats = kindOf('Deployment', 'k8s/overlays/dev/').find((m) => nameOf(m.doc) === 'nats');
      const natsContainer = firstContainer(nats?.doc ?? {});
      const natsArgs = [...list(natsContainer.command), ...list(natsContainer.args)].map(String);
      expect(natsArgs).toContain('-js');
      expect(natsArgs).toContain('-sd');
      // The users and permissions of deploy/nats/nats-server.conf, from the ConfigMap deploy/nats generates.
      expect(natsArgs.join(' ')).toContain('-c /etc/nats/nats-server.conf');
      const natsEnv = list(natsContainer.env).map((entry) => String(dict(entry).name));
      expect(natsEnv).toEqual(expect.arrayContaining(natsPasswordVariables()));
      expect(list(dev.resources)).toContain('../../../deploy/nats');
      const sandbox = firstContainer(
        kindOf('Deployment', 'k8s/overlays/dev/').find((m) => nameOf(m.doc) === SANDBOX.name)?.doc ?? {},
      );
      expect(list(sandbox.ports).map((p) => dict(p).containerPort)).toContain(SANDBOX.port);
      for (const name of ['nats', 'postgres', 'redis', SANDBOX.name]) {
        expect(
          kindOf('Service', 'k8s/overlays/dev/').map((m) => nameOf(m.doc)),
          name,
        ).toContain(name);
      }
    });

    it('production: namespace inbox, at least two replicas of every service, no in-cluster infrastructure', () => {
      const production = overlay('production');
      expect(production.namespace).toBe('inbox');
      expect(list(production.resources)).toContain('../../base');
      expect(kindOf('Deployment', 'k8s/overlays/production/')).toEqual([]);
      expect(kindOf('StatefulSet', 'k8s/overlays/production/')).toEqual([]);

      const counts = new Map(
        list(production.replicas).map((r) => [String(dict(r).name), Number(dict(r).count)] as const),
      );
      // Autoscaled services get their floor from a patch of the autoscaler's minReplicas.
      const hpaFloors = new Map<string, number>();
      for (const patch of list(production.patches).map(dict)) {
        const target = dict(patch.target);
        if (target.kind !== 'HorizontalPodAutoscaler') continue;
        const operations = list(parse(String(patch.patch ?? '')));
        const floor = operations.map(dict).find((op) => op.path === '/spec/minReplicas')?.value;
        for (const name of AUTOSCALED) {
          if (new RegExp(`^(?:${String(target.name ?? '.*')})$`).test(name))
            hpaFloors.set(name, Number(floor));
        }
      }
      for (const name of SERVICE_NAMES) {
        const floor = AUTOSCALED.includes(name) ? hpaFloors.get(name) : counts.get(name);
        expect(floor, name).toBeGreaterThanOrEqual(2);
      }

      const config = list(production.configMapGenerator)
        .map(dict)
        .find((g) => g.name === 'inbox-config');
      expect(config?.behavior).toBe('merge');
      // NATS is reached with each service's own user, from its Secret nats-<service>, not from a ConfigMap.
      expect(list(config?.literals).map(String)).not.toEqual(
        expect.arrayContaining([expect.stringMatching(/^BUS_URL=/)]),
      );
    });
  });
});
