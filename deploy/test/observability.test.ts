// The local observability stack (docker compose --profile observability): the compose services, the
// Collector's pipeline, Prometheus's targets, Grafana's provisioning and the Inbox dashboard's queries.
// Static checks, no container engine: each file is parsed and compared with what the services expose
// (ports, metric families) and with what the other files name (hosts, ports, mount paths, the datasource).
import { existsSync, readdirSync } from 'node:fs';
import { join, posix } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { composeEnv, type Dict, dict, interpolate, list, read, root } from './support.js';

// ---------------------------------------------------------------------------------------------------
// What the services expose.

/** Our services and the port each serves its API, probes and /metrics on. */
const PORTS: Record<string, number> = {
  gateway: 8080,
  'provider-connector': 8081,
  messaging: 8082,
  pipeline: 8083,
  'webhook-dispatcher': 8084,
};
const SANDBOX = { name: 'provider-sandbox', port: 8090 };
const OWN_SERVICES = [...Object.keys(PORTS), SANDBOX.name];

/** The observability services and the host port each publishes (on the loopback interface). */
const OBSERVABILITY: Record<string, number[]> = {
  'otel-collector': [4317, 4318],
  jaeger: [16686],
  prometheus: [9090],
  grafana: [3000],
};

type Kind = 'histogram' | 'counter' | 'gauge';

/** Metric families on /metrics, as Prometheus names them (counters carry their _total). */
const FAMILIES: Record<string, Kind> = {
  http_server_request_duration: 'histogram',
  bus_command_duration: 'histogram',
  bus_consumer_redeliveries_total: 'counter',
  bus_consumer_pending: 'gauge',
  outbox_publish_lag: 'histogram',
  outbox_backlog: 'gauge',
  provider_request_duration: 'histogram',
  gateway_rate_limit_refusals_total: 'counter',
  gateway_rate_limit_fallback_decisions_total: 'counter',
  webhook_deliveries_total: 'counter',
  webhook_attempt_duration: 'histogram',
  webhook_consumer_pending: 'gauge',
  webhook_retries_pending: 'gauge',
  webhook_endpoints_disabled_total: 'counter',
  connector_kept_callbacks_total: 'counter',
  connector_kept_callbacks_backlog: 'gauge',
  connector_kept_callbacks_backlog_bytes: 'gauge',
  connector_kept_callbacks_oldest_age: 'gauge',
  // libs/db: statements inside an operation, and each pool's connections.
  db_client_operation_duration: 'histogram',
  db_client_connection_count: 'gauge',
  db_client_connection_pending_requests: 'gauge',
  db_client_connection_max: 'gauge',
  // OpenTelemetry's auto-instrumentations.
  nodejs_eventloop_utilization: 'gauge',
};
const AUTO_INSTRUMENTATION = ['nodejs_eventloop_utilization'];

/** Every series name a query may select: a histogram's _bucket/_sum/_count, a counter or gauge itself. */
const SERIES = new Map<string, string>(
  Object.entries(FAMILIES).flatMap(([family, kind]) =>
    kind === 'histogram'
      ? ['_bucket', '_sum', '_count'].map((suffix) => [`${family}${suffix}`, family] as [string, string])
      : [[family, family] as [string, string]],
  ),
);
/**
 * Series that only grow: meaningful under rate() or increase() alone. Told by their family's kind, not by
 * their suffix: `db_client_connection_count` is a gauge.
 */
const CUMULATIVE = [...SERIES]
  .filter(([, family]) => FAMILIES[family] === 'counter' || FAMILIES[family] === 'histogram')
  .map(([name]) => name);

// ---------------------------------------------------------------------------------------------------
// PromQL, as far as these checks need it: the metric names an expression selects.

const PROMQL_KEYWORDS = new Set([
  'and',
  'or',
  'unless',
  'bool',
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'offset',
  'inf',
  'nan',
]);

/** The metric names an expression selects (strings, matchers, ranges, groupings, numbers, calls dropped). */
function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ')
    .replace(/\boffset\s+\S+/g, ' ')
    .replace(/(?<![\w:])\d+(?:\.\d+)?(?:e[+-]?\d+)?/gi, ' ');
  const names = [...bare.matchAll(/[a-zA-Z_:][\w:]*(?!\s*\(|[\w:])/g)].map((m) => m[0]);
  return names.filter((name) => !PROMQL_KEYWORDS.has(name.toLowerCase()));
}

/** What is wrong with one expression: unknown series, and cumulative series read without rate/increase. */
function queryProblems(expr: string): string[] {
  const problems: string[] = [];
  const names = metricNames(expr);
  if (names.length === 0) problems.push(`selects no metric: ${expr}`);
  for (const name of names) if (!SERIES.has(name)) problems.push(`unknown series ${name}: ${expr}`);
  for (const name of CUMULATIVE) {
    const uses = expr.match(new RegExp(`\\b${name}\\b`, 'g'))?.length ?? 0;
    const rated =
      expr.match(new RegExp(`\\b(?:rate|irate|increase)\\(\\s*${name}\\b(?:\\{[^}]*\\})?\\s*\\[`, 'g'))
        ?.length ?? 0;
    if (uses !== rated) problems.push(`${name} outside rate()/increase(): ${expr}`);
  }
  for (const quantile of expr.matchAll(/histogram_quantile\(\s*[\d.]+\s*,\s*(\w+)\s+by\s*\(([^)]*)\)/g)) {
    const grouping = (quantile[2] ?? '').split(',').map((label) => label.trim());
    if (!grouping.includes('le')) problems.push(`histogram_quantile without "le" in its grouping: ${expr}`);
  }
  return problems;
}

// ---------------------------------------------------------------------------------------------------
// The files.

const compose = dict(parse(read('docker-compose.yml'), { merge: true }));
const services = dict(compose.services);
const service = (name: string): Dict => dict(services[name]);

/** A compose bind mount (short syntax) as source and target; the source relative to the repository. */
function bindMounts(name: string): { source: string; target: string; readOnly: boolean }[] {
  return list(service(name).volumes).flatMap((volume) => {
    const [source = '', target = '', mode = ''] = String(volume).split(':');
    return source.startsWith('./')
      ? [{ source: posix.normalize(source), target, readOnly: mode.split(',').includes('ro') }]
      : [];
  });
}
const mountTarget = (name: string, source: string) =>
  bindMounts(name).find((mount) => mount.source === source)?.target;

const collector = dict(parse(read('deploy/observability/otel-collector.yaml')));
const prometheus = dict(parse(read('deploy/observability/prometheus.yml')));
const grafanaDir = 'deploy/observability/grafana';
const datasources = list(
  dict(parse(read(`${grafanaDir}/provisioning/datasources/prometheus.yml`))).datasources,
).map(dict);
const dashboardProviders = list(
  dict(parse(read(`${grafanaDir}/provisioning/dashboards/inbox.yml`))).providers,
).map(dict);
const dashboardFile = `${grafanaDir}/dashboards/inbox-dashboard.json`;
const dashboard = dict(JSON.parse(read(dashboardFile)));

/** Every panel, rows' nested panels included. */
const panels: Dict[] = list(dashboard.panels)
  .map(dict)
  .flatMap((panel) => [panel, ...list(panel.panels).map(dict)]);
const queryPanels = panels.filter((panel) => panel.type !== 'row');
const exprs = queryPanels.flatMap((panel) => list(panel.targets).map((target) => String(dict(target).expr)));

// ---------------------------------------------------------------------------------------------------

describe('observability: the PromQL check itself', () => {
  it('finds the metric names an expression selects, and nothing else', () => {
    expect(
      metricNames(
        'histogram_quantile(0.95, sum by (le, http_route) (rate(http_server_request_duration_bucket{job=~"$job", otel_scope_name="http"}[5m])))',
      ),
    ).toEqual(['http_server_request_duration_bucket']);
    expect(
      metricNames(
        'sum(rate(bus_command_duration_count{outcome!="ok"}[5m])) by (subject) / on (subject) group_left sum by (subject) (rate(bus_command_duration_count[$__range]))',
      ),
    ).toEqual(['bus_command_duration_count', 'bus_command_duration_count']);
    expect(metricNames('max by (schema) (outbox_backlog) > 1e3 and bool outbox_backlog offset 5m')).toEqual([
      'outbox_backlog',
      'outbox_backlog',
    ]);
  });

  it('rejects unknown series, bare histogram families, unrated counters and a quantile without le', () => {
    expect(queryProblems('sum(rate(http_request_duration_seconds_bucket[5m]))')).toEqual([
      expect.stringMatching(/^unknown series http_request_duration_seconds_bucket/),
    ]);
    expect(queryProblems('http_server_request_duration')).toEqual([
      expect.stringMatching(/^unknown series http_server_request_duration:/),
    ]);
    expect(queryProblems('sum(outbox_backlog_total)')).toEqual([
      expect.stringMatching(/^unknown series outbox_backlog_total/),
    ]);
    expect(queryProblems('sum(webhook_deliveries_total)')).toEqual([
      expect.stringMatching(/^webhook_deliveries_total outside rate/),
    ]);
    expect(
      queryProblems(
        'histogram_quantile(0.95, sum by (channel) (rate(provider_request_duration_bucket[5m])))',
      ),
    ).toEqual([expect.stringMatching(/without "le"/)]);
    expect(queryProblems('vector(1)')).toEqual([expect.stringMatching(/^selects no metric/)]);
    expect(
      queryProblems('sum by (outcome) (increase(webhook_deliveries_total{outcome!="delivered"}[$__range]))'),
    ).toEqual([]);
  });
});

describe('observability: docker-compose.yml', () => {
  it('has the Collector, Jaeger, Prometheus and Grafana, each only in the profile observability', () => {
    for (const name of Object.keys(OBSERVABILITY)) {
      expect(services, name).toHaveProperty([name]);
      expect(service(name).profiles, name).toEqual(['observability']);
    }
  });

  it('leaves the core stack and the sandbox out of that profile', () => {
    for (const name of ['nats', 'postgres', 'redis', ...Object.keys(PORTS)]) {
      expect(service(name).profiles, name).toBeUndefined();
    }
    expect(service(SANDBOX.name).profiles).toEqual(['dev']);
    const observability = Object.keys(services).filter((name) =>
      list(service(name).profiles).includes('observability'),
    );
    expect(observability.sort()).toEqual(Object.keys(OBSERVABILITY).sort());
  });

  it('runs pinned third-party images, not our build', () => {
    for (const name of Object.keys(OBSERVABILITY)) {
      expect(String(service(name).image), name).toMatch(/^[\w.-]+\/[\w.-]+:v?\d+\.\d+\.\d+$/);
      expect(service(name).build, name).toBeUndefined();
    }
  });

  it('publishes the UIs and the OTLP ports on the loopback interface only', () => {
    for (const [name, ports] of Object.entries(OBSERVABILITY)) {
      expect(list(service(name).ports).map(String), name).toEqual(
        ports.map((port) => `127.0.0.1:${port}:${port}`),
      );
    }
  });

  it('mounts only files that exist, read-only', () => {
    for (const name of Object.keys(OBSERVABILITY)) {
      for (const mount of bindMounts(name)) {
        expect(mount.source, name).toMatch(/^deploy\/observability\//);
        expect(existsSync(join(root, mount.source)), `${name}: ${mount.source}`).toBe(true);
        expect(mount.readOnly, `${name}: ${mount.source}`).toBe(true);
      }
    }
    expect(mountTarget('otel-collector', 'deploy/observability/otel-collector.yaml')).toBeDefined();
    expect(mountTarget('prometheus', 'deploy/observability/prometheus.yml')).toBe(
      '/etc/prometheus/prometheus.yml',
    );
  });

  it('starts the Collector on the file it mounts', () => {
    const target = mountTarget('otel-collector', 'deploy/observability/otel-collector.yaml');
    expect(list(service('otel-collector').command).map(String)).toContain(`--config=${target}`);
  });

  it('lets every service export traces, opt-in: OTEL_EXPORTER_OTLP_ENDPOINT is passed through, empty by default', () => {
    for (const name of OWN_SERVICES) {
      expect(composeEnv(service(name)).OTEL_EXPORTER_OTLP_ENDPOINT, name).toBe(
        `\${OTEL_EXPORTER_OTLP_ENDPOINT:-}`,
      );
    }
    const traced = dict(
      parse(
        interpolate(read('docker-compose.yml'), {
          ADMIN_TOKEN: 'a'.repeat(32),
          ENCRYPTION_KEY: Buffer.alloc(32).toString('base64'),
          OTEL_EXPORTER_OTLP_ENDPOINT: 'http://otel-collector:4318',
        }),
        { merge: true },
      ),
    );
    // The documented value names the Collector's OTLP/HTTP receiver on the compose network.
    const url = new URL(composeEnv(dict(dict(traced.services).gateway)).OTEL_EXPORTER_OTLP_ENDPOINT ?? '');
    expect(services).toHaveProperty([url.hostname]);
    const http = dict(dict(dict(dict(collector.receivers).otlp).protocols).http);
    expect(String(http.endpoint)).toBe(`0.0.0.0:${url.port}`);
  });

  it('applies the hardening of our containers to our services, whatever the third-party images do', () => {
    for (const name of OWN_SERVICES) {
      expect(service(name).read_only, name).toBe(true);
      expect(list(service(name).cap_drop), name).toEqual(['ALL']);
    }
  });
});

describe('observability: deploy/observability/otel-collector.yaml', () => {
  const receivers = dict(collector.receivers);
  const processors = dict(collector.processors);
  const exporters = dict(collector.exporters);
  const traces = dict(dict(dict(collector.service).pipelines).traces);
  const typeOf = (id: string) => id.split('/')[0];

  it('receives OTLP over gRPC on 4317 and HTTP on 4318, on every interface', () => {
    const protocols = dict(dict(receivers.otlp).protocols);
    expect(dict(protocols.grpc).endpoint).toBe('0.0.0.0:4317');
    expect(dict(protocols.http).endpoint).toBe('0.0.0.0:4318');
  });

  it('wires otlp -> batch -> an OTLP exporter to Jaeger (plaintext) and debug in the traces pipeline', () => {
    expect(list(traces.receivers)).toEqual(['otlp']);
    expect(list(traces.processors)).toEqual(['batch']);
    const toJaeger = list(traces.exporters)
      .map(String)
      .filter((id) => typeOf(id) === 'otlp' && dict(exporters[id]).endpoint === 'jaeger:4317');
    expect(toJaeger).toHaveLength(1);
    expect(dict(dict(exporters[toJaeger[0]!]).tls).insecure).toBe(true);
    expect(list(traces.exporters)).toContain('debug');
    expect(dict(exporters.debug).verbosity).toBe('basic');
  });

  it('defines every component a pipeline names (the Collector refuses to start otherwise)', () => {
    for (const pipeline of Object.values(dict(dict(collector.service).pipelines)).map(dict)) {
      for (const id of list(pipeline.receivers).map(String)) expect(receivers, id).toHaveProperty([id]);
      for (const id of list(pipeline.processors).map(String)) expect(processors, id).toHaveProperty([id]);
      for (const id of list(pipeline.exporters).map(String)) expect(exporters, id).toHaveProperty([id]);
    }
  });

  it('sends to a Jaeger that takes OTLP on the compose network', () => {
    expect(composeEnv(service('jaeger')).COLLECTOR_OTLP_ENABLED).toBe('true');
    expect(list(service('otel-collector').depends_on)).toContain('jaeger');
  });
});

describe('observability: deploy/observability/prometheus.yml', () => {
  const jobs = list(prometheus.scrape_configs).map(dict);
  const targets = jobs.flatMap((job) =>
    list(job.static_configs).flatMap((config) =>
      list(dict(config).targets).map((target) => ({
        job: String(job.job_name),
        path: String(job.metrics_path ?? '/metrics'),
        target: String(target),
      })),
    ),
  );

  it('scrapes every 15 s', () => {
    expect(dict(prometheus.global).scrape_interval).toBe('15s');
    for (const job of jobs) expect(job.scrape_interval ?? '15s', String(job.job_name)).toBe('15s');
  });

  it("scrapes each service's /metrics at its compose name and port, in a job named after it", () => {
    for (const [name, port] of Object.entries(PORTS)) {
      expect(targets, name).toContainEqual({ job: name, path: '/metrics', target: `${name}:${port}` });
      // The port the compose service listens on.
      expect(dict(dict(service(name).build).args).PORT, name).toBe(String(port));
    }
    expect(targets).toContainEqual({
      job: SANDBOX.name,
      path: '/metrics',
      target: `${SANDBOX.name}:${SANDBOX.port}`,
    });
  });

  it('names only compose services, each once', () => {
    const hosts = targets.map(({ target }) => target.split(':')[0]!);
    for (const host of hosts) expect(services, host).toHaveProperty([host]);
    expect(new Set(hosts).size).toBe(hosts.length);
    expect(new Set(jobs.map((job) => job.job_name)).size).toBe(jobs.length);
  });
});

describe('observability: Grafana provisioning', () => {
  it('provisions Prometheus at http://prometheus:9090 as the default datasource', () => {
    expect(datasources).toHaveLength(1);
    const [datasource] = datasources;
    expect(datasource?.type).toBe('prometheus');
    expect(datasource?.url).toBe('http://prometheus:9090');
    expect(datasource?.isDefault).toBe(true);
    expect(list(service('prometheus').ports).map(String)).toContain('127.0.0.1:9090:9090');
  });

  it('mounts the provisioning directory where Grafana reads it', () => {
    expect(mountTarget('grafana', `${grafanaDir}/provisioning`)).toBe('/etc/grafana/provisioning');
  });

  it('points the dashboards provider at the mounted directory that holds inbox-dashboard.json', () => {
    expect(dashboardProviders).toHaveLength(1);
    const provider = dashboardProviders[0]!;
    expect(provider.type).toBe('file');
    const path = String(dict(provider.options).path);
    const source = bindMounts('grafana').find((mount) => mount.target === path)?.source;
    expect(source, `no bind mount at ${path}`).toBe(`${grafanaDir}/dashboards`);
    expect(readdirSync(join(root, source!))).toContain('inbox-dashboard.json');
    expect(composeEnv(service('grafana')).GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH).toBe(
      `${path}/inbox-dashboard.json`,
    );
  });
});

describe('observability: the Inbox dashboard', () => {
  const datasourceUid = String(datasources[0]?.uid);

  it('is a Grafana dashboard JSON of schema version 39 with a stable uid', () => {
    expect(dashboard.title).toBe('Inbox');
    expect(dashboard.uid).toBe('inbox');
    expect(dashboard.schemaVersion).toBe(39);
    expect(queryPanels.length).toBeGreaterThanOrEqual(15);
    const ids = panels.map((panel) => panel.id);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('has only timeseries and stat panels (and rows), each placed on the grid with at least one query', () => {
    for (const panel of queryPanels) {
      const title = String(panel.title);
      expect(['timeseries', 'stat'], title).toContain(panel.type);
      const grid = dict(panel.gridPos);
      for (const key of ['x', 'y', 'w', 'h'])
        expect(typeof grid[key], `${title} gridPos.${key}`).toBe('number');
      expect(Number(grid.x) + Number(grid.w), title).toBeLessThanOrEqual(24);
      expect(list(panel.targets).length, title).toBeGreaterThan(0);
    }
  });

  it('queries the provisioned datasource everywhere', () => {
    for (const panel of queryPanels) {
      expect(dict(panel.datasource).uid, String(panel.title)).toBe(datasourceUid);
      for (const target of list(panel.targets).map(dict)) {
        expect(dict(target.datasource).uid, String(panel.title)).toBe(datasourceUid);
      }
    }
    for (const variable of list(dict(dashboard.templating).list).map(dict)) {
      expect(dict(variable.datasource).uid, String(variable.name)).toBe(datasourceUid);
    }
  });

  it('selects only series the services expose, rates what is cumulative, and keeps le in every quantile', () => {
    expect(exprs.flatMap(queryProblems)).toEqual([]);
    for (const variable of list(dict(dashboard.templating).list).map(dict)) {
      const definition = String(variable.definition);
      const metric = /^label_values\(\s*([\w:]+)/.exec(definition)?.[1];
      expect(metric && SERIES.has(metric), `variable ${String(variable.name)}: ${definition}`).toBe(true);
    }
  });

  it('covers every metric family of ours', () => {
    const used = new Set(exprs.flatMap(metricNames).map((name) => SERIES.get(name)));
    const ours = Object.keys(FAMILIES).filter((family) => !AUTO_INSTRUMENTATION.includes(family));
    expect(ours.filter((family) => !used.has(family))).toEqual([]);
  });

  it('has the panels the runbook names', () => {
    const find = (pattern: RegExp) =>
      queryPanels.filter((panel) =>
        list(panel.targets).some((target) => pattern.test(String(dict(target).expr))),
      );
    // HTTP p50 and p95 by route, and the status rate.
    for (const quantile of ['0.5', '0.95']) {
      expect(
        find(
          new RegExp(
            `histogram_quantile\\(${quantile}, sum by \\(le, http_route\\) \\(rate\\(http_server_request_duration_bucket`,
          ),
        ),
      ).not.toEqual([]);
    }
    expect(
      find(/sum by \(http_response_status_code\) \(rate\(http_server_request_duration_count/),
    ).not.toEqual([]);
    expect(find(/sum by \(le, subject\) \(rate\(bus_command_duration_bucket/)).not.toEqual([]);
    expect(find(/bus_command_duration_count\{[^}]*outcome!="ok"/)).not.toEqual([]);
    expect(find(/by \(schema\) \(outbox_backlog\)/)).not.toEqual([]);
    expect(find(/sum by \(le, schema\) \(rate\(outbox_publish_lag_bucket/)).not.toEqual([]);
    expect(find(/by \(durable\) \(bus_consumer_pending\)/)).not.toEqual([]);
    expect(find(/sum by \(durable\) \(rate\(bus_consumer_redeliveries_total/)).not.toEqual([]);
    expect(find(/sum by \(le, channel\) \(rate\(provider_request_duration_bucket/)).not.toEqual([]);
    expect(find(/sum by \(channel, outcome\) \(rate\(provider_request_duration_count/)).not.toEqual([]);
    expect(find(/sum by \(outcome\) \(rate\(webhook_deliveries_total/)).not.toEqual([]);
    expect(
      find(/histogram_quantile\(0\.95, sum by \(le[^)]*\) \(rate\(webhook_attempt_duration_bucket/),
    ).not.toEqual([]);
  });

  it('reads our HTTP histogram only, not the identically named one of the http auto-instrumentation', () => {
    // Both report http_server_request_duration; only ours (scope "http") leaves out /healthz, /readyz and
    // /metrics and keeps the route pattern, so summing both would count every request twice.
    const http = exprs.filter((expr) => /http_server_request_duration_/.test(expr));
    expect(http.length).toBeGreaterThan(0);
    for (const expr of http) {
      const selectors = [...expr.matchAll(/http_server_request_duration_\w+(\{[^}]*\})?/g)];
      for (const selector of selectors) expect(selector[1] ?? '', expr).toMatch(/otel_scope_name="http"/);
    }
  });
});

describe('observability: README', () => {
  const readme = read('README.md');

  it('has an Observability section just before Deploy, with the command and the published ports', () => {
    const section = readme.indexOf('\n## Observability\n');
    const deploy = readme.indexOf('\n## Deploy\n');
    expect(section).toBeGreaterThan(-1);
    expect(readme.slice(section + 1, deploy).match(/^## /gm)).toHaveLength(1);
    const text = readme.slice(section, deploy);
    expect(text).toContain(
      'OTEL_EXPORTER_OTLP_ENDPOINT=http://otel-collector:4318 docker compose --profile observability up',
    );
    for (const ports of Object.values(OBSERVABILITY).slice(1)) {
      for (const port of ports) expect(text).toContain(`localhost:${port}`);
    }
  });
});
