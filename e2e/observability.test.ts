import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { eventRoute } from '@inbox/contracts';
import { waitFor } from '@inbox/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { evolutionConfig } from './support/fixtures.js';
import { startReceiver, startTestStack, type TestStack } from './support/test-stack.js';

interface Span {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
}
const SERVER = 2;
const CLIENT = 3;
const PRODUCER = 4;
const CONSUMER = 5;

// A real OTLP/HTTP receiver (the Collector's protocol), collecting what every process exports.
const spans: Span[] = [];
const exportPaths = new Set<string>();
const collector = createServer((req, res) => {
  exportPaths.add(req.url ?? '');
  let body = '';
  req.on('data', (chunk: Buffer) => {
    body += chunk;
  });
  req.on('end', () => {
    if (req.url === '/v1/traces') {
      const payload = JSON.parse(body) as {
        resourceSpans: Array<{
          resource: { attributes: Array<{ key: string; value: { stringValue?: string } }> };
          scopeSpans: Array<{ spans: Array<Omit<Span, 'service'>> }>;
        }>;
      };
      for (const resourceSpan of payload.resourceSpans) {
        const service =
          resourceSpan.resource.attributes.find((a) => a.key === 'service.name')?.value.stringValue ?? '?';
        for (const scope of resourceSpan.scopeSpans)
          for (const span of scope.spans) spans.push({ ...span, service });
      }
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{}');
  });
});

let stack: TestStack;
let receiver: Awaited<ReturnType<typeof startReceiver>>;

beforeAll(async () => {
  await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve));
  receiver = await startReceiver();
  stack = await startTestStack({
    extraEnv: {
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${(collector.address() as AddressInfo).port}`,
      OTEL_BSP_SCHEDULE_DELAY: '200',
      OTEL_BLRP_SCHEDULE_DELAY: '200',
    },
    // Every request's access line is written, so an export of log lines would show.
    logLevel: 'info',
  });
});
afterAll(async () => {
  await stack?.stop();
  await receiver?.close();
  collector.close();
});

/** A JSON call as part of a trace of the caller's (a new trace id, which the test then follows). */
async function tracedFetch(url: string, method: string, headers: Record<string, string>, body: unknown) {
  const traceId = randomBytes(16).toString('hex');
  const response = await fetch(url, {
    method,
    headers: {
      ...headers,
      'content-type': 'application/json',
      traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01`,
    },
    body: JSON.stringify(body),
  });
  return { traceId, response };
}

/** A traced call to the gateway with a workspace's key. */
function tracedCall(method: string, path: string, apiKey: string, body: unknown) {
  return tracedFetch(`${stack.gatewayUrl}${path}`, method, { authorization: `Bearer ${apiKey}` }, body);
}

const inTrace = (traceId: string) => spans.filter((span) => span.traceId === traceId);
/** A trace's HTTP server span in one service, once that service has exported it. */
const serverSpanIn = (traceId: string, service: string) =>
  inTrace(traceId).find((span) => span.service === service && span.kind === SERVER);
function parentOf(span: Span): Span | undefined {
  return spans.find(
    (candidate) => candidate.spanId === span.parentSpanId && candidate.traceId === span.traceId,
  );
}

describe('one trace from the API call to the webhook', () => {
  it('joins gateway, messaging, connector, the provider call and the webhook delivery in one trace', async () => {
    const ws = await stack.admin<{ workspace_id: string; api_key: string }>('POST', '/admin/v1/workspaces', {
      name: 'traced',
    });
    const id = ws.body.workspace_id;
    await stack.admin('POST', `/admin/v1/workspaces/${id}/integrations`, {
      channel: 'alt-a',
      config: await evolutionConfig(stack, 'traced', 'k'),
    });
    await stack.admin('POST', `/admin/v1/workspaces/${id}/webhooks`, {
      url: `${receiver.url}/traced`,
      events: ['message.sent'],
    });

    const { traceId, response } = await tracedCall('POST', '/api/v1/send-message', ws.body.api_key, {
      phone: '+5511988880001',
      message: 'rastreado',
      channel: 'alt-a',
    });
    expect(response.status).toBe(200);
    await waitFor(() => receiver.received.length > 0, { what: 'the webhook' });

    // Not the sandbox: like a real provider, it is in no trace of ours.
    const expected = ['gateway', 'messaging', 'provider-connector', 'webhook-dispatcher'];
    await waitFor(
      () => {
        const services = new Set(inTrace(traceId).map((span) => span.service));
        // Each process exports in batches of its own: wait until no span's parent is still missing
        // (but the root's, which is the test's own traceparent).
        const orphans = inTrace(traceId).filter((span) => span.parentSpanId && !parentOf(span));
        // Every span the test reads, too: a process's spans of one trace may leave in two of its batches
        // (the connector's integration lookup in one, its send's command, with all of its children, in
        // the next), and neither leaves an orphan behind.
        const names = new Set(inTrace(traceId).map((span) => span.name));
        return (
          expected.every((service) => services.has(service)) &&
          [
            'process cmd.messaging.send-message',
            'process cmd.connector.send-text',
            'webhook deliver message.sent',
          ].every((name) => names.has(name)) &&
          orphans.length <= 1
        );
      },
      { what: 'spans from every process', timeoutMs: 20_000 },
    );
    const trace = inTrace(traceId);
    // The HTTP server span is named by its route pattern (service-kit names it; no express spans).
    expect(trace.find((span) => span.service === 'gateway' && span.kind === SERVER)?.name).toBe(
      'POST /api/v1/send-message',
    );

    const find = (service: string, kind: number, name: string) =>
      trace.find((span) => span.service === service && span.kind === kind && span.name === name);
    const edge = (child: Span | undefined, parentService: string, parentKind: number) => {
      expect(child, 'child span').toBeDefined();
      const parent = parentOf(child!);
      expect(parent, `parent of ${child!.service} ${child!.name}`).toBeDefined();
      expect([parent!.service, parent!.kind]).toEqual([parentService, parentKind]);
      return parent!;
    };

    // Sending on the bus makes no span: each handler's span is the child of the span that sent it.
    expect(trace.filter((span) => span.kind === PRODUCER)).toEqual([]);
    const gatewayServer = edge(
      find('messaging', CONSUMER, 'process cmd.messaging.send-message'),
      'gateway',
      SERVER,
    );
    expect(gatewayServer.name).toBe('POST /api/v1/send-message');
    const connectorCommand = find('provider-connector', CONSUMER, 'process cmd.connector.send-text');
    const messagingCommand = edge(connectorCommand, 'messaging', CONSUMER);
    expect(messagingCommand.name).toBe('process cmd.messaging.send-message');
    expect(trace.filter((span) => span.service === 'provider-sandbox')).toEqual([]);
    // The provider call is the connector's one HTTP client span, under its command's.
    const providerCall = trace.find(
      (span) => span.service === 'provider-connector' && span.kind === CLIENT && span.name === 'POST',
    );
    expect(parentOf(providerCall!)?.spanId).toBe(connectorCommand!.spanId);
    expect(
      trace.filter(
        (span) =>
          span.service === 'provider-connector' && span.kind === CLIENT && !span.name.startsWith('pg.'),
      ),
    ).toEqual([providerCall]);
    // The event is published inside the context its outbox row was written in: the command's.
    // On its workspace's lane (eventLanes): lane 0 keeps the subject of the type.
    const consumed = find(
      'webhook-dispatcher',
      CONSUMER,
      `process evt.${eventRoute({ type: 'message.sent', workspace_id: id })}`,
    );
    expect(edge(consumed, 'messaging', CONSUMER).spanId).toBe(messagingCommand.spanId);
    // The delivery is the POST's client span (no second one from the HTTP instrumentation), and the
    // receiver gets its context to continue.
    const deliver = find('webhook-dispatcher', CLIENT, 'webhook deliver message.sent');
    expect(parentOf(deliver!)?.spanId).toBe(consumed!.spanId);
    const httpCalls = trace.filter(
      (span) => span.service === 'webhook-dispatcher' && span.kind === CLIENT && !span.name.startsWith('pg.'),
    );
    expect(httpCalls).toEqual([deliver]);
    const delivered = receiver.received.find((request) => request.headers.traceparent?.includes(traceId));
    expect(delivered?.headers.traceparent).toBe(`00-${traceId}-${deliver!.spanId}-01`);
    // Statements are traced by what they do; transaction control is not traced at all.
    const statements = trace.filter(
      (span) => span.service === 'messaging' && span.name.startsWith('pg.query'),
    );
    expect(statements.map((span) => span.name)).toContainEqual(
      expect.stringMatching(/^pg\.query:with:messages:/),
    );
    expect(statements.filter((span) => /BEGIN|COMMIT|begin|commit/.test(span.name))).toEqual([]);
    // Everything hangs together: only the caller's span, outside our system, is missing.
    const orphans = trace.filter((span) => !parentOf(span));
    expect(orphans.map((span) => span.service)).toEqual(['gateway']);
  });

  it('exports spans only: log lines stay on stdout, each with its trace id once', async () => {
    const ws = await stack.admin<{ workspace_id: string; api_key: string }>('POST', '/admin/v1/workspaces', {
      name: 'logged',
    });
    // Admitted (a valid body), and answered by its owner: the workspace has no integration of the channel.
    const { traceId, response } = await tracedCall('POST', '/api/v1/send-message', ws.body.api_key, {
      phone: '+5511900000001',
      message: 'x',
      channel: 'alt-a',
    });
    expect(response.status).toBe(404);
    const gatewayOutput = () => stack.processes.get('gateway')!.output();
    await waitFor(() => gatewayOutput().includes(traceId), { what: "the request's access line" });
    const line = gatewayOutput()
      .split('\n')
      .find((text) => text.includes(traceId))!;
    expect(line.split('"trace_id"').length - 1).toBe(1);
    expect(JSON.parse(line)).toMatchObject({ trace_id: traceId, status: 404 });
    // The Collector's configuration has a traces pipeline and nothing else (deploy/observability).
    await waitFor(() => inTrace(traceId).length > 0, { what: "the request's span" });
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect([...exportPaths]).toEqual(['/v1/traces']);
  });

  it('traces what the gateway admits, and logs but does not trace what it refuses at the door', async () => {
    const ws = await stack.admin<{ workspace_id: string; api_key: string }>('POST', '/admin/v1/workspaces', {
      name: 'door',
    });
    const invalid = { phone: 'not a phone', message: 'x', channel: 'alt-a' };
    const gatewayOutput = () => stack.processes.get('gateway')!.output();
    /** A refusal has its access line, in the caller's trace. */
    const logged = async (refused: { traceId: string }, status: number) => {
      await waitFor(() => gatewayOutput().includes(refused.traceId), { what: 'the access line' });
      const line = gatewayOutput()
        .split('\n')
        .find((text) => text.includes(refused.traceId));
      expect(JSON.parse(line!)).toMatchObject({ trace_id: refused.traceId, status });
    };
    const wrongKey = await tracedCall('POST', '/api/v1/send-message', 'sk_live_wrong', invalid);
    expect(wrongKey.response.status).toBe(401);
    await logged(wrongKey, 401);
    // An invalid body is refused at the door too, once the key and the budget have let it through.
    const invalidBody = await tracedCall('POST', '/api/v1/send-message', ws.body.api_key, invalid);
    expect(invalidBody.response.status).toBe(400);
    await logged(invalidBody, 400);
    // The workspace's budget (60 a minute) spent on requests the gateway answers 400…
    for (let sent = 1; sent < 60; sent += 20) {
      const count = Math.min(20, 60 - sent);
      const answers = await Promise.all(
        Array.from({ length: count }, () => stack.api('/api/v1/send-message', ws.body.api_key, invalid)),
      );
      expect(answers.map((answer) => answer.status)).toEqual(Array(count).fill(400));
    }
    // …so that the next one is refused at the door.
    const limited = await tracedCall('POST', '/api/v1/send-message', ws.body.api_key, invalid);
    expect(limited.response.status).toBe(429);
    await logged(limited, 429);
    const other = await stack.admin<{ workspace_id: string; api_key: string }>(
      'POST',
      '/admin/v1/workspaces',
      {
        name: 'door-admitted',
      },
    );
    const traced = await tracedCall('POST', '/api/v1/send-message', other.body.api_key, {
      ...invalid,
      phone: '+5511900000001',
    });
    expect(traced.response.status).toBe(404);

    // Each process exports in batches of its own, so messaging's spans of this trace can arrive before the
    // gateway's: wait for the gateway's server span. The gateway exports spans in the order they end: once
    // the admitted request's is out, the refused ones' would be too.
    const admitted = () => serverSpanIn(traced.traceId, 'gateway');
    await waitFor(() => admitted() !== undefined, { what: "the admitted request's server span" });
    expect(admitted()?.name).toBe('POST /api/v1/send-message');
    for (const refused of [wrongKey, invalidBody, limited]) expect(inTrace(refused.traceId)).toEqual([]);
  });

  it('traces the callbacks the connector admits, and logs but does not trace those it refuses', async () => {
    const ws = await stack.admin<{ workspace_id: string }>('POST', '/admin/v1/workspaces', {
      name: 'callbacks',
    });
    const integration = await stack.admin<{ id: string }>(
      'POST',
      `/admin/v1/workspaces/${ws.body.workspace_id}/integrations`,
      { channel: 'alt-a', config: await evolutionConfig(stack, 'cb', 'k') },
    );
    // Not the provider's header: admitted (the integration is known), then refused as forged.
    const callback = (integrationId: string) =>
      tracedFetch(
        `${stack.connectorUrl}/inbound/alt-a/${integrationId}`,
        'POST',
        {},
        {
          event: 'messages.upsert',
          instance: 'cb',
          data: {},
        },
      );
    const unknown = await callback('00000000-0000-4000-8000-000000000000');
    expect(unknown.response.status).toBe(404);
    const connectorOutput = () => stack.processes.get('provider-connector')!.output();
    await waitFor(() => connectorOutput().includes(unknown.traceId), { what: 'the access line' });
    const line = connectorOutput()
      .split('\n')
      .find((text) => text.includes(unknown.traceId));
    expect(JSON.parse(line!)).toMatchObject({ trace_id: unknown.traceId, status: 404 });

    /** The admitted request has its server span, named by its route; the refused one has none. */
    const tracedOnlyOnceAdmitted = async (
      admitted: { traceId: string },
      refused: { traceId: string },
      route: string,
    ) => {
      // Its server span ends last, and may leave in a later batch than the request's other spans.
      const serverSpan = () => serverSpanIn(admitted.traceId, 'provider-connector');
      await waitFor(() => serverSpan() !== undefined, { what: `the span of ${route}` });
      expect(serverSpan()?.name).toBe(route);
      // The connector exports spans in the order they end: once the admitted request's is out, the
      // refused one's would be too.
      expect(inTrace(refused.traceId)).toEqual([]);
    };
    const admitted = await callback(integration.body.id);
    expect(admitted.response.status).toBe(401);
    await tracedOnlyOnceAdmitted(admitted, unknown, 'POST /inbound/:channel/:integrationId');

    // The live chat's routes have the same door: an origin the integration does not list is refused there.
    const chat = await stack.admin<{ id: string }>(
      'POST',
      `/admin/v1/workspaces/${ws.body.workspace_id}/integrations`,
      { channel: 'livechat', config: { name: 'Loja', allowed_origins: 'https://shop.example' } },
    );
    const session = (origin: string) =>
      tracedFetch(
        `${stack.connectorUrl}/livechat/${chat.body.id}/sessions`,
        'POST',
        { origin },
        { name: 'Ana' },
      );
    const foreign = await session('https://elsewhere.example');
    expect(foreign.response.status).toBe(403);
    const visitor = await session('https://shop.example');
    expect(visitor.response.status).toBe(201);
    await tracedOnlyOnceAdmitted(visitor, foreign, 'POST /livechat/:integrationId/sessions');
  });

  it('carries a lead move through gateway, pipeline and messaging in one trace', async () => {
    const ws = await stack.admin<{ workspace_id: string; api_key: string }>('POST', '/admin/v1/workspaces', {
      name: 'traced-lead',
    });
    const id = ws.body.workspace_id;
    await stack.admin('POST', `/admin/v1/workspaces/${id}/integrations`, {
      channel: 'alt-a',
      config: await evolutionConfig(stack, 'traced-lead', 'k'),
    });
    const pipeline = await stack.admin<{ id: string }>('POST', `/admin/v1/workspaces/${id}/pipelines`, {
      name: 'Funil',
      stages: [{ key: 'novo', name: 'Novo' }],
    });
    const sent = await stack.api<{ contactId: string }>('/api/v1/send-message', ws.body.api_key, {
      phone: '+5511988880002',
      message: 'lead',
      channel: 'alt-a',
    });
    const { traceId, response: moved } = await tracedCall(
      'PATCH',
      `/api/v1/leads/${sent.body.contactId}`,
      ws.body.api_key,
      { pipeline_id: pipeline.body.id, stage: 'novo' },
    );
    expect(moved.status).toBe(200);
    // Each process exports its spans in batches, children (a handler's statements) often before their
    // parent: wait for the spans the test reads, not merely for one of each process.
    const named = (service: string, name: string) =>
      inTrace(traceId).find((span) => span.service === service && span.name === name);
    await waitFor(
      () => {
        const handled = named('pipeline', 'process cmd.pipeline.move-lead');
        const checked = named('messaging', 'process cmd.messaging.get-contact');
        return handled && checked && parentOf(handled) && parentOf(checked);
      },
      { what: 'spans from gateway, pipeline and messaging', timeoutMs: 20_000 },
    );
    const trace = inTrace(traceId);
    const moveHandled = trace.find(
      (span) =>
        span.service === 'pipeline' &&
        span.kind === CONSUMER &&
        span.name === 'process cmd.pipeline.move-lead',
    );
    expect(parentOf(moveHandled!)).toMatchObject({ service: 'gateway', kind: SERVER });
    const contactChecked = trace.find(
      (span) => span.service === 'messaging' && span.name === 'process cmd.messaging.get-contact',
    );
    expect(parentOf(contactChecked!)).toMatchObject({ service: 'pipeline', kind: CONSUMER });
  });

  it('exposes the metric series on every process', async () => {
    const scrape = async (service: string) => {
      const port = stack.specs.get(service)!.port;
      return (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    };
    const gateway = await scrape('gateway');
    expect(gateway).toMatch(/^http_server_request_duration\w*_bucket\{/m);
    // One series of requests served, by route: ours, not the HTTP instrumentation's second one.
    const scopes = new Set(
      [...gateway.matchAll(/^http_server_request_duration\w*_count\{[^}]*otel_scope_name="([^"]+)"/gm)].map(
        (match) => match[1],
      ),
    );
    expect([...scopes]).toEqual(['http']);
    expect(gateway).toMatch(/^bus_command_duration\w*_bucket\{.*subject="cmd\.messaging\.send-message"/m);
    const messaging = await scrape('messaging');
    expect(messaging).toMatch(/^outbox_publish_lag\w*_bucket\{/m);
    expect(messaging).toMatch(/^bus_command_duration\w*_bucket\{.*subject="cmd\.connector\.send-text"/m);
    const connector = await scrape('provider-connector');
    expect(connector).toMatch(/^provider_request_duration\w*_bucket\{.*channel="alt-a".*outcome="ok"/m);
    // Read from Postgres as the connector starts: present before any callback is kept.
    expect(connector).toMatch(/^connector_kept_callbacks_backlog\{[^}]*\} \d+$/m);
    expect(connector).toMatch(/^connector_kept_callbacks_oldest_age\{/m);
    const dispatcher = await scrape('webhook-dispatcher');
    expect(dispatcher).toMatch(/^webhook_deliveries_total\{.*outcome="delivered"/m);
    expect(dispatcher).toMatch(/^webhook_attempt_duration\w*_bucket\{/m);
    expect(dispatcher).toMatch(/^webhook_consumer_pending\{/m);
    expect(await scrape('pipeline')).toMatch(/^target_info\{service_name="pipeline"/m);
    // The other families the dashboard reads: statements, and the event loop.
    expect(messaging).toMatch(/^db_client_operation_duration\w*_bucket\{/m);
    // Provider calls are timed once, by the connector (no instrumentation times undici's calls again).
    expect(connector).not.toMatch(/^http_client_request_duration/m);
    expect(gateway).toMatch(/^nodejs_eventloop_utilization\w*\{/m);
    if (process.env.PRINT_METRIC_NAMES) {
      const names = new Set<string>();
      for (const text of [gateway, messaging, connector, dispatcher])
        for (const m of text.matchAll(/^# TYPE (\S+) (\S+)/gm)) names.add(`${m[1]} ${m[2]}`);
      console.log([...names].sort().join('\n'));
    }
  });
});
