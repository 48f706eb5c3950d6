// `npm start`: every service in one Node process, an embedded Postgres, the in-process bus and the
// provider sandbox, with a demo workspace ready to send through. For a first look, not for production.
import { randomBytes } from 'node:crypto';
import { InProcessBus } from '@inbox/bus';
import { createPool, type Pool } from '@inbox/db';
import { createEvolutionInstance, createSandbox } from '@inbox/provider-sandbox';
import {
  createHttpApp,
  createLogger,
  finishHttpApp,
  listen,
  prepareSchema,
  type RunningServer,
  type ServiceEngine,
  stopOnSignals,
} from '@inbox/service-kit';
import { startEmbeddedDatabase } from './embedded-database.js';
import { ensurePanelBuilt } from './panel-build.js';
import { serviceDefinitions } from './service-definitions.js';
import { readSettings, sandboxCidrsNote } from './settings.js';

const started = Date.now();
const settings = readSettings();
const logger = createLogger('all-in-one', {
  level: settings.LOG_LEVEL === 'info' ? 'warn' : settings.LOG_LEVEL,
});
const stops: Array<() => Promise<void>> = [];
const stopAll = async () => {
  for (const stop of stops.splice(0).reverse())
    await stop().catch((error) => logger.error({ err: error }, 'stop failed'));
};
// Ctrl-C: the services drain, then the database stops; one line says it is done.
stopOnSignals(
  {
    stop: async () => {
      await stopAll();
      console.log('Stopped.');
    },
  },
  logger,
);

try {
  console.log('Starting the inbox platform in all-in-one mode…');
  // The gateway serves the panel from its build; a missing or outdated one is built first (about a second).
  await ensurePanelBuilt((line) => console.log(line));
  const database = settings.DATABASE_URL
    ? { url: settings.DATABASE_URL, stop: async () => undefined }
    : await startEmbeddedDatabase((line) => logger.warn(line));
  stops.push(database.stop);

  const pools: Pool[] = [];
  stops.push(async () => {
    await Promise.all(pools.map((pool) => pool.end()));
  });
  const bus = new InProcessBus({
    onHandlerError: (error, context) => logger.error({ err: error, ...context }, 'handler failed'),
  });
  const engines = new Map<string, ServiceEngine>();
  stops.push(() =>
    bus.drain(async () => {
      for (const engine of engines.values()) await engine.stop();
    }),
  );

  for (const definition of serviceDefinitions(settings)) {
    const pool = createPool({ url: database.url, schema: definition.schema ?? 'public', max: 5 });
    pools.push(pool);
    await prepareSchema(pool, definition, logger);
    const engine = await definition.create({
      pool,
      bus,
      logger: createLogger(definition.name, { level: settings.LOG_LEVEL }),
    });
    await engine.start();
    engines.set(definition.name, engine);
  }

  const serve = async (name: string, port: number): Promise<RunningServer> => {
    const serviceLogger = createLogger(name, { level: settings.LOG_LEVEL });
    const engine = engines.get(name)!;
    const app = createHttpApp({
      logger: serviceLogger,
      bodyLimit: engine.bodyLimit,
      parseJson: engine.parseJson,
      traceFrom: engine.traceFrom,
      trustProxy: engine.trustProxy,
      readiness: { bus: () => bus.healthy() },
    });
    engine.routes?.(app);
    finishHttpApp(app, serviceLogger);
    const server = await listen(app, port, '127.0.0.1');
    stops.push(server.close);
    return server;
  };

  let sandboxUrl: string | undefined;
  if (settings.sandboxEnabled) {
    // The connector serves plain HTTP here, so the sandbox takes http callbacks that real providers refuse.
    const sandbox = await listen(
      createSandbox({ httpCallbacks: 'allow', sentLogLimit: settings.SANDBOX_SENT_LOG_LIMIT }).app,
      settings.SANDBOX_PORT,
      '127.0.0.1',
    );
    stops.push(sandbox.close);
    sandboxUrl = sandbox.url;
  }
  const connector = await serve('provider-connector', settings.CONNECTOR_PORT);
  const gateway = await serve('gateway', settings.GATEWAY_PORT);

  const admin = async (path: string, body: unknown) => {
    const response = await fetch(`${gateway.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${settings.ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (!response.ok)
      throw new Error(`demo set-up: ${path} answered ${response.status} ${await response.text()}`);
    return (await response.json()) as Record<string, string>;
  };
  const workspace = await admin('/admin/v1/workspaces', { name: 'Demo workspace' });
  if (sandboxUrl) {
    // The sandbox's Evolution, like the real one, knows only instances an operator created.
    const apiKey = randomBytes(16).toString('hex');
    await createEvolutionInstance(sandboxUrl, 'demo', apiKey);
    await admin(`/admin/v1/workspaces/${workspace.workspace_id}/integrations`, {
      channel: 'alt-a',
      name: 'Sandbox alt-a',
      config: { base_url: `${sandboxUrl}/alt-a`, instance: 'demo', api_key: apiKey },
    });
  }

  // The demo page is served by the connector, so the widget's allowed origin is the connector's own.
  const livechat = await admin(`/admin/v1/workspaces/${workspace.workspace_id}/integrations`, {
    channel: 'livechat',
    name: 'Demo live chat',
    config: { name: 'Demo live chat', allowed_origins: connector.url },
  });

  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  console.log(`
Inbox platform is running (all-in-one mode, ready in ${seconds}s). Ctrl-C stops everything.

  Gateway (public and admin API)   ${gateway.url}
  Panel (sign in with the token)   ${gateway.url}/panel
  API docs (read and try calls)    ${gateway.url}/docs
  OpenAPI document                 ${gateway.url}/openapi.json
  Provider connector               ${connector.url}
  Live chat demo page (a visitor)  ${connector.url}/livechat/${livechat.id}/demo
  Provider sandbox                 ${sandboxUrl ?? 'off'}
${sandboxCidrsNote(settings)}  Admin token                      ${settings.ADMIN_TOKEN}${settings.adminTokenGenerated ? '   (generated; set ADMIN_TOKEN to choose one)' : ''}
  Demo workspace                   ${workspace.workspace_id}
  Demo API key                     ${workspace.api_key}

Send a message through the demo alt-a integration:

  curl -sS -X POST ${gateway.url}/api/v1/send-message \\
    -H 'Authorization: Bearer ${workspace.api_key}' \\
    -H 'Content-Type: application/json' \\
    -d '{"phone":"+5511999990000","message":"Olá do inbox!","channel":"alt-a","contactName":"Maria"}'
${
  sandboxUrl
    ? `
See what the provider received:

  curl -sS '${sandboxUrl}/_sandbox/sent?to=5511999990000'
`
    : ''
}`);
} catch (error) {
  const inUse = (error as NodeJS.ErrnoException).code === 'EADDRINUSE';
  console.error(
    inUse
      ? `A port is already in use (${(error as Error).message}). Choose others with GATEWAY_PORT, CONNECTOR_PORT and SANDBOX_PORT.`
      : `Could not start: ${(error as Error).stack ?? String(error)}`,
  );
  await stopAll();
  process.exit(1);
}
