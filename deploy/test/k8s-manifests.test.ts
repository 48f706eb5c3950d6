// Builds every Kustomize overlay (and the overlays with the optional components: KEDA, RabbitMQ) the way
// a user would, validates each rendered object against the Kubernetes API schemas offline
// (kubernetes-models, which bundles them; the KEDA ScaledObject, a CRD it does not know, against a zod
// schema of the fields used), then checks what the rendered whole must guarantee: probes, hardening,
// drain time, autoscaling, disruption budgets, Ingress routes, the NetworkPolicy rules and, on RabbitMQ,
// that nothing of NATS is left.

import { subscriptionsFor } from '@inbox/bus';
import { eventConsumers, eventLanes } from '@inbox/contracts';
import { stopGraceMs } from '@inbox/service-kit';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  containersOf,
  type Dict,
  dict,
  importDevDependency,
  list,
  nameOf,
  podSpec,
  type Rendered,
  renderAllOverlays,
  rendered,
} from './support.js';

const SERVICES: Record<string, number> = {
  gateway: 8080,
  'provider-connector': 8081,
  messaging: 8082,
  pipeline: 8083,
  'webhook-dispatcher': 8084,
};
const SERVICE_NAMES = Object.keys(SERVICES);
const PUBLIC = ['gateway', 'provider-connector'];
const TALKS_TO_OUTSIDE = ['provider-connector', 'webhook-dispatcher'];
/** Seconds a service may take to drain after SIGTERM (docs/decisions/0011). */
// What a service may take to stop after SIGTERM (the longest send it may be waiting on).
const DRAIN_SECONDS = Math.ceil(stopGraceMs / 1000);
const PRIVATE_RANGES = ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '169.254.0.0/16', '127.0.0.0/8'];
/** The client port of each broker. */
const BUS_PORTS = { nats: 4222, rabbitmq: 5672 } as const;

const DEV = 'k8s/overlays/dev';
const PRODUCTION = 'k8s/overlays/production';
const KEDA = 'k8s/overlays/production + k8s/components/keda';
const PRODUCTION_RABBITMQ = 'k8s/overlays/production + k8s/components/rabbitmq';
const DEV_RABBITMQ = 'k8s/overlays/dev + k8s/components/rabbitmq + k8s/components/rabbitmq-server';
const KEDA_RABBITMQ = 'k8s/overlays/production + k8s/components/rabbitmq + k8s/components/keda-rabbitmq';
const isDev = (overlay: Rendered) => overlay.name.startsWith(DEV);
const isProduction = (overlay: Rendered) => overlay.name.startsWith(PRODUCTION);
const hasKeda = (overlay: Rendered) => overlay.name.includes('components/keda');

const ofKind = (overlay: Rendered, kind: string): Dict[] => overlay.docs.filter((doc) => doc.kind === kind);
const named = (overlay: Rendered, kind: string, name: string): Dict | undefined =>
  ofKind(overlay, kind).find((doc) => nameOf(doc) === name);
const labelsOf = (doc: Dict): Record<string, string> =>
  dict(dict(dict(dict(doc.spec).template).metadata).labels) as Record<string, string>;

// ---------------------------------------------------------------------------------------------------
// Schema validation.

/** The fields of KEDA's ScaledObject (keda.sh/v1alpha1) that k8s/components/keda uses. */
const ScaledObject = z.strictObject({
  apiVersion: z.literal('keda.sh/v1alpha1'),
  kind: z.literal('ScaledObject'),
  metadata: z.object({
    name: z.string().min(1),
    namespace: z.string().min(1).optional(),
    labels: z.record(z.string(), z.string()).optional(),
  }),
  spec: z.strictObject({
    scaleTargetRef: z.strictObject({
      apiVersion: z.string().optional(),
      kind: z.string().optional(),
      name: z.string().min(1),
    }),
    minReplicaCount: z.number().int().min(0).optional(),
    maxReplicaCount: z.number().int().min(1).optional(),
    pollingInterval: z.number().int().positive().optional(),
    cooldownPeriod: z.number().int().min(0).optional(),
    advanced: z
      .strictObject({
        horizontalPodAutoscalerConfig: z.strictObject({ behavior: z.record(z.string(), z.unknown()) }),
      })
      .optional(),
    triggers: z
      .array(
        z.strictObject({
          type: z.enum(['nats-jetstream', 'rabbitmq', 'cpu', 'memory']),
          metricType: z.enum(['Utilization', 'AverageValue']).optional(),
          // KEDA reads trigger metadata as strings only.
          metadata: z.record(z.string(), z.string()),
        }),
      )
      .min(1),
  }),
});

type Validate = (doc: Dict) => string[];

/** kubernetes-models/<group>/<version>/<Kind>, e.g. kubernetes-models/apps/v1/Deployment. */
async function validatorFor(apiVersion: string, kind: string): Promise<Validate> {
  if (apiVersion === 'keda.sh/v1alpha1' && kind === 'ScaledObject') {
    return (doc) => {
      const parsed = ScaledObject.safeParse(doc);
      return parsed.success ? [] : parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
    };
  }
  const module = await importDevDependency('kubernetes-models', `${apiVersion}/${kind}`).catch(
    (error: unknown) => {
      if (String(error).includes('is not installed')) throw error;
      throw new Error(`no Kubernetes schema for ${apiVersion} ${kind}`, { cause: error });
    },
  );
  const Model = module[kind] as (new (data: Dict) => { validate(): void }) | undefined;
  if (typeof Model !== 'function') throw new Error(`kubernetes-models has no ${kind} in ${apiVersion}`);
  return (doc) => {
    try {
      new Model(doc).validate();
      return [];
    } catch (error) {
      return [String((error as Error).message)];
    }
  };
}

describe('k8s/ rendered with kustomize', () => {
  it('builds every overlay: base, dev, production, and with the KEDA and RabbitMQ components', () => {
    const overlays = renderAllOverlays();
    expect(overlays.map((o) => o.name)).toEqual([
      'k8s/base',
      DEV,
      PRODUCTION,
      KEDA,
      PRODUCTION_RABBITMQ,
      DEV_RABBITMQ,
      KEDA_RABBITMQ,
    ]);
    expect(overlays.map((o) => o.bus)).toEqual([
      'nats',
      'nats',
      'nats',
      'nats',
      'rabbitmq',
      'rabbitmq',
      'rabbitmq',
    ]);
    for (const overlay of overlays) {
      for (const name of SERVICE_NAMES) {
        expect(named(overlay, 'Deployment', name), `${overlay.name} ${name}`).toBeDefined();
      }
    }
  });

  it('validates every object against the Kubernetes schemas, offline', async () => {
    const overlays = renderAllOverlays();
    const validators = new Map<string, Validate>();
    const problems: string[] = [];
    let checked = 0;
    for (const overlay of overlays) {
      for (const doc of overlay.docs) {
        const key = `${doc.apiVersion} ${doc.kind}`;
        let validate = validators.get(key);
        if (!validate) {
          validate = await validatorFor(String(doc.apiVersion), String(doc.kind));
          validators.set(key, validate);
        }
        for (const problem of validate(doc))
          problems.push(`${overlay.name} ${key} ${nameOf(doc)}: ${problem}`);
        checked++;
      }
    }
    expect(problems).toEqual([]);
    expect(checked).toBeGreaterThan(100);
    // Every kind we ship was checked by a real schema (the map holds one validator per kind).
    expect([...validators.keys()].sort()).toEqual(
      expect.arrayContaining([
        'apps/v1 Deployment',
        'autoscaling/v2 HorizontalPodAutoscaler',
        'networking.k8s.io/v1 Ingress',
        'networking.k8s.io/v1 NetworkPolicy',
        'policy/v1 PodDisruptionBudget',
        'v1 ConfigMap',
        'v1 Service',
        'keda.sh/v1alpha1 ScaledObject',
      ]),
    );
  });

  it('rejects a broken manifest (the validator is really at work)', async () => {
    const overlays = renderAllOverlays();
    const validate = await validatorFor('apps/v1', 'Deployment');
    const deployment = structuredClone(named(overlays[0]!, 'Deployment', 'gateway')!);
    const container = containersOf(deployment)[0]!;
    container.ports = [{ containerPort: 'eighty' }];
    expect(validate(deployment).join('\n')).toMatch(/containerPort/);
  });

  it('references only ConfigMaps and Secrets by names the rendering knows, and commits no secret', () => {
    const overlays = renderAllOverlays();
    for (const overlay of overlays) {
      const configMaps = new Set(ofKind(overlay, 'ConfigMap').map(nameOf));
      expect(ofKind(overlay, 'Secret'), overlay.name).toEqual([]);
      for (const deployment of ofKind(overlay, 'Deployment')) {
        for (const container of containersOf(deployment)) {
          for (const source of list(container.envFrom).map(dict)) {
            const ref = dict(source.configMapRef);
            if (Object.keys(ref).length > 0) expect(configMaps, `${overlay.name}`).toContain(ref.name);
            expect(
              source.secretRef,
              `${overlay.name} ${nameOf(deployment)}: name secret keys one by one`,
            ).toBe(undefined);
          }
          for (const entry of list(container.env).map(dict)) {
            const from = dict(entry.valueFrom);
            if (from.configMapKeyRef) expect(configMaps).toContain(dict(from.configMapKeyRef).name);
            if (!from.secretKeyRef) continue;
            // The shared Secret, or a broker user's own: the service's (nats-<service> or, on RabbitMQ,
            // rabbitmq-<service>), or each service's and the operator's for the NATS server.
            const allowed =
              nameOf(deployment) === 'nats'
                ? [...SERVICE_NAMES, 'operator'].map((name) => `nats-${name}`)
                : ['inbox-secrets', `${overlay.bus}-${nameOf(deployment)}`];
            expect(allowed, `${overlay.name} ${nameOf(deployment)}`).toContain(dict(from.secretKeyRef).name);
          }
        }
      }
    }
  });
});

describe('every rendered service Deployment', () => {
  it('probes /healthz and /readyz on its port, with requests and limits', () => {
    const overlays = renderAllOverlays();
    for (const overlay of overlays) {
      for (const [name, port] of Object.entries(SERVICES)) {
        const container = containersOf(named(overlay, 'Deployment', name) ?? {})[0] ?? {};
        const where = `${overlay.name} ${name}`;
        expect(dict(dict(container.livenessProbe).httpGet), where).toMatchObject({ path: '/healthz', port });
        expect(dict(dict(container.readinessProbe).httpGet), where).toMatchObject({ path: '/readyz', port });
        const resources = dict(container.resources);
        for (const bound of ['requests', 'limits']) {
          expect(dict(resources[bound]), where).toEqual(
            expect.objectContaining({ cpu: expect.anything(), memory: expect.anything() }),
          );
        }
      }
    }
  });

  it('is hardened: non-root, no privilege escalation, read-only root, all capabilities dropped', () => {
    const overlays = renderAllOverlays();
    for (const overlay of overlays) {
      for (const deployment of ofKind(overlay, 'Deployment')) {
        const spec = podSpec(deployment);
        for (const container of containersOf(deployment)) {
          const where = `${overlay.name} ${nameOf(deployment)}`;
          const effective = { ...dict(spec.securityContext), ...dict(container.securityContext) };
          expect(effective.runAsNonRoot, where).toBe(true);
          expect(effective.allowPrivilegeEscalation, where).toBe(false);
          expect(effective.readOnlyRootFilesystem, where).toBe(true);
          expect(effective.privileged ?? false, where).toBe(false);
          expect(list(dict(dict(container.securityContext).capabilities).drop), where).toContain('ALL');
          expect(list(dict(dict(container.securityContext).capabilities).add), where).toEqual([]);
          expect(dict(effective.seccompProfile).type, where).toBe('RuntimeDefault');
        }
        expect(spec.hostNetwork ?? false).toBe(false);
      }
    }
  });

  it('gives the SIGTERM drain room after the preStop pause', () => {
    const overlays = renderAllOverlays();
    for (const overlay of overlays) {
      for (const name of SERVICE_NAMES) {
        const deployment = named(overlay, 'Deployment', name) ?? {};
        const container = containersOf(deployment)[0] ?? {};
        const preStop = list(dict(dict(dict(container.lifecycle).preStop).exec).command).map(String);
        const pause = preStop[0] === 'sleep' ? Number(preStop[1]) : 0;
        const grace = Number(podSpec(deployment).terminationGracePeriodSeconds ?? 30);
        expect(pause + DRAIN_SECONDS, `${overlay.name} ${name}`).toBeLessThan(grace);
        // Rolling updates never drop below the wanted count.
        const rolling = dict(dict(dict(deployment.spec).strategy).rollingUpdate);
        expect(rolling.maxUnavailable, `${overlay.name} ${name}`).toBe(0);
      }
    }
  });

  it('is selected by its Service, whose target port the container names', () => {
    const overlays = renderAllOverlays();
    for (const overlay of overlays) {
      for (const name of SERVICE_NAMES) {
        const deployment = named(overlay, 'Deployment', name) ?? {};
        const service = named(overlay, 'Service', name) ?? {};
        const selector = dict(dict(service.spec).selector) as Record<string, string>;
        expect(Object.keys(selector).length).toBeGreaterThan(0);
        expect(labelsOf(deployment), `${overlay.name} ${name}`).toMatchObject(selector);
        const containerPorts = containersOf(deployment).flatMap((c) => list(c.ports).map(dict));
        for (const port of list(dict(service.spec).ports).map(dict)) {
          const target = port.targetPort ?? port.port;
          expect(
            containerPorts.some((p) => p.name === target || p.containerPort === target),
            `${overlay.name} ${name} targetPort ${String(target)}`,
          ).toBe(true);
        }
      }
    }
  });
});

describe('scaling and disruption', () => {
  it('autoscales provider-connector and webhook-dispatcher on CPU, without a fixed replica count', () => {
    const overlays = renderAllOverlays().filter((overlay) => !hasKeda(overlay));
    expect(overlays.length).toBe(5);
    for (const overlay of overlays) {
      const hpas = ofKind(overlay, 'HorizontalPodAutoscaler');
      expect(hpas.map(nameOf).sort(), overlay.name).toEqual([...TALKS_TO_OUTSIDE].sort());
      for (const hpa of hpas) {
        const target = dict(dict(hpa.spec).scaleTargetRef);
        const deployment = named(overlay, 'Deployment', String(target.name));
        expect(deployment, overlay.name).toBeDefined();
        expect(dict(deployment?.spec).replicas, overlay.name).toBeUndefined();
        const cpu = list(dict(hpa.spec).metrics)
          .map((m) => dict(dict(m).resource))
          .find((r) => r.name === 'cpu');
        expect(dict(cpu?.target).averageUtilization).toBe(70);
      }
    }
  });

  /** Each ScaledObject's broker triggers, as `<type> <what it reads>`. */
  const triggersOf = (overlay: Rendered, name: string) =>
    list(dict(named(overlay, 'ScaledObject', name)?.spec).triggers)
      .map(dict)
      .filter((t) => t.type !== 'cpu')
      .map((t) => {
        const m = dict(t.metadata);
        return t.type === 'nats-jetstream'
          ? `nats-jetstream ${String(m.stream)}/${String(m.consumer)}`
          : `${String(t.type)} ${String(m.mode)} ${String(m.queueName)} from ${String(m.hostFromEnv)}`;
      })
      .sort();

  it('KEDA components: ScaledObjects on the durable consumers replace the autoscaler they would fight', () => {
    const overlays = renderAllOverlays().filter(hasKeda);
    expect(overlays.map((o) => o.name)).toEqual([KEDA, KEDA_RABBITMQ]);
    for (const keda of overlays) {
      const scaled = ofKind(keda, 'ScaledObject');
      expect(scaled.map(nameOf).sort(), keda.name).toEqual(['messaging', 'webhook-dispatcher']);
      const hpaTargets = ofKind(keda, 'HorizontalPodAutoscaler').map((h) =>
        String(dict(dict(h.spec).scaleTargetRef).name),
      );
      for (const object of scaled) {
        const target = String(dict(dict(object.spec).scaleTargetRef).name);
        const deployment = named(keda, 'Deployment', target);
        expect(deployment, target).toBeDefined();
        expect(dict(deployment?.spec).replicas, target).toBeUndefined();
        expect(hpaTargets, target).not.toContain(target);
        expect(dict(object.metadata).namespace).toBe('inbox');
        expect(Number(dict(object.spec).minReplicaCount)).toBeGreaterThanOrEqual(2);
        // CPU stays a second signal.
        expect(
          list(dict(object.spec).triggers).some((t) => dict(t).type === 'cpu'),
          target,
        ).toBe(true);
      }
    }
  });

  it("KEDA on NATS reads the JetStream consumers; on RabbitMQ the durables' queues, with BUS_URL", () => {
    const nats = rendered(KEDA);
    // Every lane of the dispatcher's durables, as the bus names them.
    const dispatcherDurables = subscriptionsFor(
      'webhook-dispatcher',
      eventConsumers['webhook-dispatcher'],
    ).map((lane) => lane.durable);
    expect(dispatcherDurables).toHaveLength(eventLanes.count);
    expect(triggersOf(nats, 'webhook-dispatcher')).toEqual(
      dispatcherDurables.map((durable) => `nats-jetstream EVENTS/${durable}`).sort(),
    );
    // Every lane of messaging's inbound durables, as the bus names them, and its lead moves.
    const messagingDurables = [
      ...subscriptionsFor('messaging', eventConsumers.messaging).map((lane) => lane.durable),
      'messaging-leads',
    ];
    expect(messagingDurables).toHaveLength(eventLanes.count + 1);
    expect(triggersOf(nats, 'messaging')).toEqual(
      messagingDurables.map((durable) => `nats-jetstream EVENTS/${durable}`).sort(),
    );
    const rabbit = rendered(KEDA_RABBITMQ);
    expect(triggersOf(rabbit, 'webhook-dispatcher')).toEqual(
      dispatcherDurables.map((durable) => `rabbitmq QueueLength events.${durable} from BUS_URL`).sort(),
    );
    expect(triggersOf(rabbit, 'messaging')).toEqual(
      messagingDurables.map((durable) => `rabbitmq QueueLength events.${durable} from BUS_URL`).sort(),
    );
    // hostFromEnv names a variable of the target's container that holds the amqp:// URL: its BUS_URL,
    // from its own rabbitmq-<service> Secret.
    for (const object of ofKind(rabbit, 'ScaledObject')) {
      const container = containersOf(named(rabbit, 'Deployment', nameOf(object)) ?? {})[0] ?? {};
      const busUrl = list(container.env)
        .map(dict)
        .find((e) => e.name === 'BUS_URL');
      expect(dict(dict(busUrl?.valueFrom).secretKeyRef).name).toBe(`rabbitmq-${nameOf(object)}`);
      for (const trigger of list(dict(object.spec).triggers).map(dict)) {
        if (trigger.type === 'rabbitmq') expect(dict(trigger.metadata).protocol).toBe('amqp');
      }
    }
  });

  it('production: a PodDisruptionBudget per service selecting its pods, and at least two replicas', () => {
    const overlays = renderAllOverlays().filter(isProduction);
    expect(overlays.length).toBe(4);
    for (const overlay of overlays) {
      for (const name of SERVICE_NAMES) {
        const pdb = named(overlay, 'PodDisruptionBudget', name);
        expect(pdb, `${overlay.name} ${name}`).toBeDefined();
        const selector = dict(dict(dict(pdb?.spec).selector).matchLabels) as Record<string, string>;
        expect(labelsOf(named(overlay, 'Deployment', name) ?? {})).toMatchObject(selector);
        const deployment = named(overlay, 'Deployment', name) ?? {};
        const hpa = named(overlay, 'HorizontalPodAutoscaler', name);
        const scaled = named(overlay, 'ScaledObject', name);
        const floor =
          dict(deployment.spec).replicas ?? dict(hpa?.spec).minReplicas ?? dict(scaled?.spec).minReplicaCount;
        expect(Number(floor), `${overlay.name} ${name}`).toBeGreaterThanOrEqual(2);
      }
    }
  });

  it('production: NATS (or RabbitMQ), Postgres and Redis are external, not workloads', () => {
    for (const production of renderAllOverlays().filter(isProduction)) {
      // NATS by an ExternalName Service; RabbitMQ by the address in each service's BUS_URL Secret.
      const external = production.bus === 'nats' ? ['nats', 'postgres', 'redis'] : ['postgres', 'redis'];
      for (const name of external) {
        const service = named(production, 'Service', name);
        expect(dict(service?.spec).type, `${production.name} ${name}`).toBe('ExternalName');
        expect(String(dict(service?.spec).externalName), name).toMatch(/\./);
      }
      const workloads = production.docs.filter((d) => ['Deployment', 'StatefulSet'].includes(String(d.kind)));
      expect(workloads.map(nameOf).sort(), production.name).toEqual([...SERVICE_NAMES].sort());
    }
  });
});

describe('Ingress', () => {
  it('routes only /api/, /admin/ and /panel to the gateway and /inbound/ to the connector', () => {
    const overlays = renderAllOverlays();
    for (const overlay of overlays) {
      const routes = ofKind(overlay, 'Ingress').flatMap((ingress) =>
        list(dict(ingress.spec).rules).flatMap((rule) =>
          list(dict(dict(rule).http).paths).map((p) => {
            const path = dict(p);
            const backend = dict(dict(path.backend).service);
            return `${String(backend.name)}:${String(dict(backend.port).name ?? dict(backend.port).number)} ${String(path.pathType)} ${String(path.path)}`;
          }),
        ),
      );
      expect(routes.sort(), overlay.name).toEqual([
        'gateway:http Prefix /admin/',
        'gateway:http Prefix /api/',
        'gateway:http Prefix /panel',
        'provider-connector:http Prefix /inbound/',
      ]);
      for (const ingress of ofKind(overlay, 'Ingress')) {
        for (const rule of list(dict(ingress.spec).rules)) expect(dict(rule).host).toBeTruthy();
      }
    }
    for (const production of overlays.filter(isProduction)) {
      for (const ingress of ofKind(production, 'Ingress')) {
        expect(list(dict(ingress.spec).tls).length, `${production.name} ${nameOf(ingress)}`).toBe(1);
      }
    }
  });
});

// ---------------------------------------------------------------------------------------------------
// NetworkPolicy: a small evaluator of which policies select a pod and what their rules allow.

interface Selector {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: string; values?: string[] }[];
}

function selects(selector: unknown, labels: Record<string, string>): boolean {
  const { matchLabels = {}, matchExpressions = [] } = dict(selector) as Selector;
  return (
    Object.entries(matchLabels).every(([key, value]) => labels[key] === value) &&
    matchExpressions.every(({ key, operator, values = [] }) => {
      if (operator === 'In') return values.includes(labels[key] ?? '\u0000');
      if (operator === 'NotIn') return !values.includes(labels[key] ?? '\u0000');
      if (operator === 'Exists') return key in labels;
      if (operator === 'DoesNotExist') return !(key in labels);
      throw new Error(`unknown operator ${operator}`);
    })
  );
}

const policiesFor = (overlay: Rendered, labels: Record<string, string>, type: 'Ingress' | 'Egress') =>
  ofKind(overlay, 'NetworkPolicy').filter((policy) => {
    const spec = dict(policy.spec);
    return list(spec.policyTypes).includes(type) && selects(spec.podSelector, labels);
  });

type Peer = Dict;
const rulesOf = (policies: Dict[], type: 'ingress' | 'egress') =>
  policies.flatMap((policy) =>
    list(dict(policy.spec)[type]).map((rule) => ({
      policy: nameOf(policy),
      peers: list(dict(rule)[type === 'ingress' ? 'from' : 'to']).map(dict) as Peer[],
      ports: list(dict(rule).ports).map(dict),
    })),
  );

/** A peer outside the namespace: another namespace, an address block, or (no peers) anywhere. */
const isOutside = (peer: Peer) => peer.namespaceSelector !== undefined || peer.ipBlock !== undefined;
const isWide = (peer: Peer) => ['0.0.0.0/0', '::/0'].includes(String(dict(peer.ipBlock).cidr));
const allowsPort = (ports: Dict[], port: number | string) =>
  ports.length === 0 || ports.some((p) => p.port === undefined || p.port === port);

describe('NetworkPolicies', () => {
  const podLabels = (overlay: Rendered, name: string) => labelsOf(named(overlay, 'Deployment', name) ?? {});

  it('deny everything by default, for every pod in the namespace', () => {
    const overlays = renderAllOverlays();
    for (const overlay of overlays) {
      const deny = ofKind(overlay, 'NetworkPolicy').find((p) => {
        const spec = dict(p.spec);
        return (
          Object.keys(dict(spec.podSelector)).length === 0 &&
          list(spec.policyTypes).includes('Ingress') &&
          list(spec.policyTypes).includes('Egress') &&
          spec.ingress === undefined &&
          spec.egress === undefined
        );
      });
      expect(deny, overlay.name).toBeDefined();
    }
  });

  it('let traffic in from outside the namespace only to the gateway and the connector (and metrics)', () => {
    const overlays = renderAllOverlays();
    for (const overlay of overlays) {
      for (const name of SERVICE_NAMES) {
        const rules = rulesOf(policiesFor(overlay, podLabels(overlay, name), 'Ingress'), 'ingress');
        for (const rule of rules) {
          const where = `${overlay.name} ${name} (${rule.policy})`;
          expect(rule.peers.length, `${where}: an ingress rule open to everyone`).toBeGreaterThan(0);
          for (const peer of rule.peers.filter(isOutside)) {
            expect(peer.ipBlock, where).toBeUndefined();
            const namespace = dict(dict(peer.namespaceSelector).matchLabels)['kubernetes.io/metadata.name'];
            if (namespace === 'ingress-nginx') {
              // The ingress controller: the two public services, on their own port only.
              expect(PUBLIC, where).toContain(name);
              expect(
                rule.ports.map((p) => p.port),
                where,
              ).toEqual([SERVICES[name]]);
            } else {
              // Prometheus, on the service's HTTP port only (/metrics).
              expect(namespace, where).toBe('monitoring');
              expect(
                rule.ports.map((p) => p.port),
                where,
              ).toEqual(['http']);
            }
          }
        }
        const fromController = rules.some((rule) =>
          rule.peers.some(
            (peer) =>
              dict(dict(peer.namespaceSelector).matchLabels)['kubernetes.io/metadata.name'] ===
              'ingress-nginx',
          ),
        );
        expect(fromController, `${overlay.name} ${name}`).toBe(PUBLIC.includes(name));
      }
    }
  });

  it('let only the connector and the dispatcher reach the internet, never private ranges', () => {
    const overlays = renderAllOverlays();
    for (const overlay of overlays) {
      for (const name of SERVICE_NAMES) {
        const rules = rulesOf(policiesFor(overlay, podLabels(overlay, name), 'Egress'), 'egress');
        const where = `${overlay.name} ${name}`;
        for (const rule of rules)
          expect(rule.peers.length, `${where} (${rule.policy}): open egress`).toBeGreaterThan(0);
        const wide = rules.flatMap((rule) =>
          rule.peers.map((peer) => dict(peer.ipBlock)).filter((block) => block.cidr === '0.0.0.0/0'),
        );
        expect(wide.length > 0, where).toBe(TALKS_TO_OUTSIDE.includes(name));
        for (const block of wide)
          expect(list(block.except), where).toEqual(expect.arrayContaining(PRIVATE_RANGES));
        // No other address block reaches past the cluster.
        const others = rules.flatMap((rule) =>
          rule.peers
            .map((peer) => dict(peer.ipBlock))
            .filter((b) => b.cidr && !['0.0.0.0/0', '::/0'].includes(String(b.cidr))),
        );
        expect(others, where).toEqual([]);
      }
    }
  });

  it('let every service resolve names and reach its broker and Postgres (never the other broker); the gateway also Redis', () => {
    const overlays = renderAllOverlays();
    // The base alone names no infrastructure: each overlay adds the way to it.
    for (const overlay of overlays.slice(1)) {
      const other = overlay.bus === 'nats' ? 'rabbitmq' : 'nats';
      for (const name of SERVICE_NAMES) {
        const rules = rulesOf(policiesFor(overlay, podLabels(overlay, name), 'Egress'), 'egress');
        // The internet rule does not count: it excludes the private ranges the cluster lives in.
        const reaches = (port: number) =>
          rules.some((rule) => allowsPort(rule.ports, port) && rule.peers.some((peer) => !isWide(peer)));
        const where = `${overlay.name} ${name}`;
        expect(reaches(53), `${where} DNS`).toBe(true);
        expect(reaches(BUS_PORTS[overlay.bus]), `${where} ${overlay.bus}`).toBe(true);
        expect(reaches(BUS_PORTS[other]), `${where} ${other}`).toBe(false);
        expect(reaches(5432), `${where} Postgres`).toBe(true);
        expect(reaches(6379), `${where} Redis`).toBe(name === 'gateway');
      }
    }
  });

  it('dev: the in-namespace infrastructure accepts the services, and the sandbox pairs with the connector', () => {
    const devs = renderAllOverlays().filter(isDev);
    expect(devs.map((dev) => dev.bus)).toEqual(['nats', 'rabbitmq']);
    for (const dev of devs) {
      const ingressTo = (name: string) =>
        rulesOf(policiesFor(dev, podLabels(dev, name), 'Ingress'), 'ingress');
      const admits = (target: string, source: string, port: number) =>
        ingressTo(target).some(
          (rule) =>
            allowsPort(rule.ports, port) &&
            rule.peers.some((peer) => !isOutside(peer) && selects(peer.podSelector, podLabels(dev, source))),
        );
      // The way out of the service's pod to the broker's pod, not just to some pod on that port.
      const egressTo = (source: string, target: string, port: number) =>
        rulesOf(policiesFor(dev, podLabels(dev, source), 'Egress'), 'egress').some(
          (rule) =>
            allowsPort(rule.ports, port) &&
            rule.peers.some((peer) => !isOutside(peer) && selects(peer.podSelector, podLabels(dev, target))),
        );
      const broker = dev.bus;
      for (const name of SERVICE_NAMES) {
        const where = `${dev.name} ${name}`;
        expect(admits(broker, name, BUS_PORTS[broker]), where).toBe(true);
        expect(egressTo(name, broker, BUS_PORTS[broker]), where).toBe(true);
        expect(admits('postgres', name, 5432), where).toBe(true);
        expect(egressTo(name, 'postgres', 5432), where).toBe(true);
        expect(admits('redis', name, 6379), where).toBe(name === 'gateway');
      }
      expect(admits('provider-sandbox', 'provider-connector', 8090)).toBe(true);
      expect(admits('provider-connector', 'provider-sandbox', 8081)).toBe(true);
    }
  });
});

// ---------------------------------------------------------------------------------------------------
// The RabbitMQ component (k8s/components/rabbitmq, and rabbitmq-server for dev).

describe('RabbitMQ component', () => {
  const rabbitOverlays = () => renderAllOverlays().filter((overlay) => overlay.bus === 'rabbitmq');

  it('is rendered on production, on dev with the in-namespace broker, and with KEDA', () => {
    expect(rabbitOverlays().map((o) => o.name)).toEqual([PRODUCTION_RABBITMQ, DEV_RABBITMQ, KEDA_RABBITMQ]);
  });

  it('gives every service BUS_URL from its own rabbitmq-<service> Secret, and nothing names a NATS Secret', () => {
    for (const overlay of rabbitOverlays()) {
      for (const name of SERVICE_NAMES) {
        const env = list(containersOf(named(overlay, 'Deployment', name) ?? {})[0]?.env).map(dict);
        const busUrl = env.filter((entry) => entry.name === 'BUS_URL');
        expect(busUrl.length, `${overlay.name} ${name}`).toBe(1);
        expect(dict(dict(busUrl[0]?.valueFrom).secretKeyRef), `${overlay.name} ${name}`).toEqual({
          name: `rabbitmq-${name}`,
          key: 'BUS_URL',
        });
      }
      const secretNames = JSON.stringify(overlay.docs).match(/"name":"nats-[a-z-]+"/g) ?? [];
      expect(secretNames, overlay.name).toEqual([]);
    }
  });

  it('leaves nothing of NATS: no workload, Service, volume, ConfigMap or policy, and no port 4222 anywhere', () => {
    for (const overlay of rabbitOverlays()) {
      const natsObjects = overlay.docs.filter(
        (doc) =>
          nameOf(doc).startsWith('nats') ||
          dict(dict(doc.metadata).labels)['app.kubernetes.io/name'] === 'nats',
      );
      expect(
        natsObjects.map((doc) => `${String(doc.kind)} ${nameOf(doc)}`),
        overlay.name,
      ).toEqual([]);
      for (const policy of ofKind(overlay, 'NetworkPolicy')) {
        expect(JSON.stringify(policy.spec), `${overlay.name} ${nameOf(policy)}`).not.toMatch(/\b4222\b/);
      }
    }
    // The component removed NATS's rule from services-to-infra and kept the others.
    for (const overlay of rabbitOverlays()) {
      const ports = list(dict(named(overlay, 'NetworkPolicy', 'services-to-infra')?.spec).egress).flatMap(
        (rule) => list(dict(rule).ports).map((p) => dict(p).port),
      );
      expect(ports, overlay.name).toContain(5432);
    }
  });

  it("puts its own objects in the overlay's namespace", () => {
    for (const overlay of rabbitOverlays()) {
      const namespace = isDev(overlay) ? 'inbox-dev' : 'inbox';
      for (const doc of overlay.docs.filter((d) => d.kind !== 'Namespace')) {
        expect(dict(doc.metadata).namespace, `${overlay.name} ${String(doc.kind)} ${nameOf(doc)}`).toBe(
          namespace,
        );
      }
    }
  });

  it('dev: runs one RabbitMQ node on a volume, under a fixed hostname, with its password from inbox-secrets', () => {
    const dev = rendered(DEV_RABBITMQ);
    const deployment = named(dev, 'Deployment', 'rabbitmq') ?? {};
    const spec = podSpec(deployment);
    const container = containersOf(deployment)[0] ?? {};
    expect(String(container.image)).toMatch(/^rabbitmq:\d+\.\d+-management-alpine$/);
    expect(dict(deployment.spec).replicas).toBe(1);
    expect(dict(dict(deployment.spec).strategy).type).toBe('Recreate');
    // The node is rabbit@<hostname>, and its data directory is named after it.
    expect(spec.hostname).toBe('rabbitmq');
    const data = list(container.volumeMounts)
      .map(dict)
      .find((mount) => mount.mountPath === '/var/lib/rabbitmq');
    const volume = list(spec.volumes)
      .map(dict)
      .find((v) => v.name === data?.name);
    const claim = String(dict(volume?.persistentVolumeClaim).claimName);
    expect(named(dev, 'PersistentVolumeClaim', claim), claim).toBeDefined();
    // The Erlang cookie in that volume must keep its owner-only mode across remounts.
    expect(dict(spec.securityContext).fsGroupChangePolicy).toBe('OnRootMismatch');
    const env = list(container.env).map(dict);
    expect(env.find((e) => e.name === 'RABBITMQ_DEFAULT_USER')?.value).toBe('inbox');
    expect(dict(dict(env.find((e) => e.name === 'RABBITMQ_DEFAULT_PASS')?.valueFrom).secretKeyRef)).toEqual({
      name: 'inbox-secrets',
      key: 'RABBITMQ_PASSWORD',
    });
    // Its schedulers unbound: bound to cores of a node it shares with other pods, one waits for its busy core.
    expect(env.find((e) => e.name === 'RABBITMQ_SCHEDULER_BIND_TYPE')?.value).toBe('u');
    // The services' URL names the Service rabbitmq on 5672.
    const service = named(dev, 'Service', 'rabbitmq');
    expect(list(dict(service?.spec).ports).map((p) => dict(p).port)).toContain(5672);
    expect(labelsOf(deployment)).toMatchObject(dict(dict(service?.spec).selector));
    // Not one of the services: no part-of label, so no service policy selects it.
    expect(labelsOf(deployment)['app.kubernetes.io/part-of']).toBeUndefined();
  });

  it('production: runs no broker of its own', () => {
    for (const name of [PRODUCTION_RABBITMQ, KEDA_RABBITMQ]) {
      const overlay = rendered(name);
      expect(named(overlay, 'Deployment', 'rabbitmq'), name).toBeUndefined();
      expect(named(overlay, 'Service', 'rabbitmq'), name).toBeUndefined();
      expect(ofKind(overlay, 'PersistentVolumeClaim'), name).toEqual([]);
    }
  });
});
