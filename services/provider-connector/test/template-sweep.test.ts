import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Pool } from '@inbox/db';
import { AddressPolicy, OutboundGuard } from '@inbox/outbound-http';
import { createSandbox } from '@inbox/provider-sandbox';
import { createLogger, SecretBox } from '@inbox/service-kit';
import { waitFor } from '@inbox/testkit';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { templates } from '../src/handlers/templates.js';
import { IntegrationSweep, type IntegrationSweepOptions } from '../src/integration-sweep.js';
import { IntegrationStore } from '../src/store/integrations.js';
import { TemplateStore } from '../src/store/templates.js';
import { migratedPool } from './support.js';

const logger = createLogger('provider-connector', { level: 'silent' });
const closers: Array<() => Promise<void>> = [];
let pool: Pool;

beforeAll(async () => {
  pool = await migratedPool();
});
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
  await pool.query('delete from integrations');
});
afterAll(async () => {
  await pool?.end();
});

async function listen(server: Server): Promise<string> {
  server.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  closers.push(() => close(server));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function close(server: Server): Promise<void> {
  if (!server.listening) return;
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
}

/** A tenant's own "provider": it never answers, or answers every call with a Graph error. */
async function tenantProvider(mode: 'silent' | 'failing') {
  const calls: string[] = [];
  const server = createServer((req, res) => {
    calls.push(req.url ?? '');
    if (mode === 'silent') return;
    res.writeHead(500, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({ error: { message: 'An unknown error occurred', type: 'OAuthException', code: 1 } }),
    );
  });
  return { url: `${await listen(server)}/chat-official`, calls, close: () => close(server) };
}

// Replicas share the key that seals the integrations' credentials.
const key = SecretBox.generateKey();

async function startWorld(options: Partial<IntegrationSweepOptions & { maxAgeMs: number }> = {}) {
  const sandbox = createSandbox({ httpCallbacks: 'allow' });
  const sandboxUrl = await listen(createServer(sandbox.app));
  const store = new IntegrationStore(pool, new SecretBox(key));
  const catalogue = new TemplateStore(pool);
  const guard = new OutboundGuard(AddressPolicy.fromSetting('127.0.0.0/8'), { timeoutMs: 60_000 });
  closers.push(() => guard.close());
  const deps = { integrations: store, templates: catalogue, guard, logger, providerTimeoutMs: 60_000 };
  const { maxAgeMs, everyMs, workers } = {
    maxAgeMs: 60 * 60_000,
    everyMs: 60 * 60_000,
    workers: 2,
    ...options,
  };
  const sweep = new IntegrationSweep(
    {
      what: 'template refresh',
      claimDue: (busyWorkspaces) => catalogue.claimDue({ maxAgeMs, retryAfterMs: everyMs, busyWorkspaces }),
      integrations: store,
      logger,
      workOn: (stored, workspaceId, stopping) => templates.refresh(deps, stored, workspaceId, stopping),
    },
    { everyMs, workers },
  );

  /** A chat-official integration of `workspaceId` on `baseUrl`, its catalogue last fetched `refreshedAt`. */
  const integrate = async (workspaceId: string, baseUrl: string, refreshedAt: Date | null = null) => {
    const account = `pn-${randomUUID().slice(0, 8)}`;
    const created = await store.create(workspaceId, {
      channel: 'chat-official',
      config: {
        base_url: baseUrl,
        phone_number_id: account,
        waba_id: `waba-${account}`,
        access_token: `token-${account}`,
        app_secret: `secret-${account}`,
        verify_token: `verify-${account}`,
      },
      accountId: account,
    });
    const id = created!.integration.id;
    await pool.query('update integrations set templates_refreshed_at = $2 where id = $1', [id, refreshedAt]);
    return { id, account };
  };
  /** An integration on the sandbox, with one approved template there. */
  const integrateOnSandbox = async (workspaceId: string, refreshedAt: Date | null = null) => {
    const made = await integrate(workspaceId, `${sandboxUrl}/chat-official`, refreshedAt);
    const registered = await fetch(`${sandboxUrl}/_sandbox/templates`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ account: made.account, name: 'boas_vindas', language: 'pt_BR', body: 'Olá!' }),
    });
    expect(registered.status).toBe(201);
    return made;
  };
  const catalogueOf = async (integrationId: string) =>
    (await catalogue.list(integrationId)).templates.map((template) => template.name);
  const attempted = async (workspaceId: string) =>
    (
      await pool.query<{ n: number }>(
        'select count(*)::int as n from integrations where workspace_id = $1 and templates_attempted_at is not null',
        [workspaceId],
      )
    ).rows[0]!.n;
  return { sweep, catalogue, integrate, integrateOnSandbox, catalogueOf, attempted };
}

it("holds one worker for a tenant whose provider keeps silent, never the other tenants' catalogues", async () => {
  const world = await startWorld();
  const silent = await tenantProvider('silent');
  const hostile = randomUUID();
  // Never fetched, so the first in line; every one of them would hold a refresh until the timeout.
  for (let i = 0; i < 5; i++) await world.integrate(hostile, silent.url);
  const other = randomUUID();
  const theirs = await world.integrateOnSandbox(other, new Date(Date.now() - 2 * 60 * 60_000));

  const pass = world.sweep.pass();
  await waitFor(async () => (await world.catalogueOf(theirs.id)).includes('boas_vindas'), {
    what: "the other tenant's catalogue refreshed while the silent provider holds its call",
  });
  expect(silent.calls).toHaveLength(1);
  expect(await world.attempted(hostile)).toBe(1);

  // Stopping aborts the call the silent provider holds (its timeout is a minute away) and claims no more.
  await world.sweep.stop();
  await pass;
  expect(await world.attempted(hostile)).toBe(1);
  expect(await world.catalogueOf(theirs.id)).toEqual(['boas_vindas']);
});

it('puts a refresh that failed behind the others until its retry is due, and two replicas take each one once', async () => {
  const world = await startWorld();
  const replica = await startWorld();
  const failing = await tenantProvider('failing');
  const tenants = Array.from({ length: 6 }, () => randomUUID());
  for (const tenant of tenants) await world.integrate(tenant, failing.url);

  await Promise.all([world.sweep.pass(), replica.sweep.pass()]);
  expect(failing.calls).toHaveLength(6);
  for (const tenant of tenants) expect(await world.attempted(tenant)).toBe(1);

  // Still within the retry delay: nothing is due, nothing is called.
  await Promise.all([world.sweep.pass(), replica.sweep.pass()]);
  expect(failing.calls).toHaveLength(6);

  // A catalogue that came due meanwhile is taken before the failed ones are tried again.
  const other = randomUUID();
  const theirs = await world.integrateOnSandbox(other);
  await world.sweep.pass();
  expect(await world.catalogueOf(theirs.id)).toEqual(['boas_vindas']);
  expect(failing.calls).toHaveLength(6);

  // An hour later (the retry delay) they are due again, behind a catalogue never tried.
  await pool.query(
    "update integrations set templates_attempted_at = templates_attempted_at - interval '1 hour'",
  );
  const untried = await world.integrateOnSandbox(randomUUID());
  expect(
    await world.catalogue.claimDue({ maxAgeMs: 60 * 60_000, retryAfterMs: 60 * 60_000, busyWorkspaces: [] }),
  ).toMatchObject({ id: untried.id });
  await Promise.all([world.sweep.pass(), replica.sweep.pass()]);
  expect(failing.calls).toHaveLength(12);
  await Promise.all([world.sweep.stop(), replica.sweep.stop()]);
});

it('passes as it starts, not a turn later: what an outage left due is taken up as the connector comes back', async () => {
  const world = await startWorld({ everyMs: 60 * 60_000 });
  const stale = await world.integrateOnSandbox(randomUUID(), new Date(Date.now() - 2 * 60 * 60_000));
  world.sweep.start();
  await waitFor(async () => (await world.catalogueOf(stale.id)).includes('boas_vindas'), {
    what: 'the stale catalogue refreshed by the pass at start',
  });
  await world.sweep.stop();
});
