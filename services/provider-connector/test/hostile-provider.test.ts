import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type AppError, maxRenderedTemplateChars, platformTexts } from '@inbox/contracts';
import type { Pool } from '@inbox/db';
import { AddressPolicy, OutboundGuard } from '@inbox/outbound-http';
import { createLogger, SecretBox } from '@inbox/service-kit';
import { waitFor } from '@inbox/testkit';
import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  maxCatalogueChars,
  maxCatalogueTemplates,
  providerErrorMaxChars,
} from '../src/adapters/channel-adapter.js';
import { sendText } from '../src/handlers/send-text.js';
import { missRefreshes, templates } from '../src/handlers/templates.js';
import { IntegrationStore } from '../src/store/integrations.js';
import { TemplateStore } from '../src/store/templates.js';
import { migratedPool } from './support.js';

// A tenant names its provider's base_url: what answers there is the tenant's, and may answer anything.

let pool: Pool;
let guard: OutboundGuard;
let providerUrl: string;
let answer: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => res.end();
const provider = createServer((req, res) => answer(req, res));
const logger = createLogger('provider-connector', { level: 'silent' });

beforeAll(async () => {
  pool = await migratedPool();
  guard = new OutboundGuard(AddressPolicy.fromSetting('127.0.0.0/8'), { timeoutMs: 5_000 });
  provider.listen(0, '127.0.0.1');
  await new Promise((resolve) => provider.once('listening', resolve));
  providerUrl = `http://127.0.0.1:${(provider.address() as AddressInfo).port}`;
});
afterAll(async () => {
  provider.closeAllConnections();
  provider.close();
  await guard?.close();
  await pool?.end();
});

const json = (res: ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
};

async function world() {
  const store = new IntegrationStore(pool, new SecretBox(SecretBox.generateKey()));
  const catalogue = new TemplateStore(pool);
  const deps = { integrations: store, templates: catalogue, guard, logger, providerTimeoutMs: 5_000 };
  const workspaceId = randomUUID();
  const official = async () => {
    const created = await store.create(workspaceId, {
      channel: 'chat-official',
      config: {
        base_url: providerUrl,
        phone_number_id: 'pn',
        waba_id: 'waba',
        access_token: 't',
        app_secret: 's',
        verify_token: 'v',
      },
      accountId: randomUUID(),
    });
    return created!;
  };
  return { store, catalogue, deps, workspaceId, official };
}

const template = (name: string, body = 'Olá') => ({
  name,
  language: 'pt_BR',
  status: 'APPROVED',
  category: 'MARKETING',
  components: [{ type: 'BODY', text: body }],
});

/**
 * A catalogue of one template, then a refresh from a provider whose every page (`page(n)`, n from 1)
 * names a next one: what the refresh was refused with, how many pages it read, and the catalogue after.
 * `rewrite` changes each page's JSON text, for what no JSON.stringify would write.
 */
async function refreshEndlessListing(page: (n: number) => unknown[], rewrite = (json: string) => json) {
  const { catalogue, deps, workspaceId, official } = await world();
  const stored = await official();
  await catalogue.replace(stored.integration.id, [
    { name: 'antes', language: 'pt_BR', status: 'APPROVED', body: 'Oi', header_format: null, buttons: [] },
  ]);
  let pages = 0;
  answer = (req, res) => {
    pages++;
    const next = new URL(req.url ?? '/', providerUrl);
    next.searchParams.set('after', String(pages));
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(rewrite(JSON.stringify({ data: page(pages), paging: { next: next.toString() } })));
  };
  const refused = await templates.refresh(deps, stored, workspaceId).then(
    () => undefined,
    (error: unknown) => error as AppError,
  );
  const kept = (await catalogue.list(stored.integration.id)).templates.map((t) => t.name);
  return { refused, pages, kept };
}

it('refuses a template listing longer than a catalogue holds, and keeps the catalogue it had', async () => {
  // Pages far over the 100 asked for.
  const { refused, pages, kept } = await refreshEndlessListing((n) =>
    Array.from({ length: 4_000 }, (_, i) => template(`t${n}_${i}`)),
  );
  expect(refused).toMatchObject({
    status: 502,
    body: { error: platformTexts.templateCatalogueTooLarge(maxCatalogueTemplates) },
  });
  expect(pages).toBe(Math.ceil(maxCatalogueTemplates / 4_000));
  expect(kept).toEqual(['antes']);
});

it('refuses a template listing with more text than a catalogue holds, and keeps the catalogue it had', async () => {
  // Each page within the 1 MiB a provider's answer may have, one template whose buttons fill it.
  const { refused, pages, kept } = await refreshEndlessListing((n) => [
    {
      ...template(`t${n}`),
      components: [
        {
          type: 'BUTTONS',
          buttons: [{ type: 'URL', text: 'Abrir', url: `https://x.example/${'y'.repeat(900_000)}` }],
        },
      ],
    },
  ]);
  expect(refused).toMatchObject({
    status: 502,
    body: { error: platformTexts.templateCatalogueTooMuchText(maxCatalogueChars) },
  });
  // Refused at the page that went past it, not after the hundred pages a listing may have.
  expect(pages).toBe(Math.ceil(maxCatalogueChars / 900_000));
  expect(kept).toEqual(['antes']);
});

it('counts what a listing holds in memory against the bound, not only its characters', async () => {
  // Buttons within the bounds, each value a character or two of JSON and tens of bytes of heap: a hundred
  // pages of them are under the bound in characters, and far over it in what they hold.
  const { refused, pages, kept } = await refreshEndlessListing((n) =>
    Array.from({ length: 100 }, (_, i) => ({
      ...template(`t${n}_${i}`),
      components: [
        { type: 'BUTTONS', buttons: [{ type: 'URL', example: Array.from({ length: 700 }, () => 0) }] },
      ],
    })),
  );
  expect(refused).toMatchObject({
    status: 502,
    body: { error: platformTexts.templateCatalogueTooMuchText(maxCatalogueChars) },
  });
  expect(pages).toBeLessThan(20);
  expect(kept).toEqual(['antes']);
});

it('keeps no buttons of a shape no provider lists, so a listing holds no more than it counts', async () => {
  // Meta's deepest button: an OTP one's supported apps, a list of objects.
  const otp = {
    type: 'OTP',
    otp_type: 'ONE_TAP',
    text: 'Copiar código',
    autofill_text: 'Preencher',
    supported_apps: [{ package_name: 'com.example.app', signature_hash: 'K8a/AINcGX7' }],
  };
  // About 750 KB of JSON, and some 250,000 values, each tens of bytes of heap: a hundred such pages held
  // at once were gigabytes, under a bound that counted only characters.
  const wide = [{ type: 'URL', text: 'Abrir', example: Array.from({ length: 250_000 }, () => []) }];
  // Nested as deep as a parser takes, written as text: JSON.stringify itself overflows the stack on it.
  const deep = `${'['.repeat(100_000)}${']'.repeat(100_000)}`;
  const { refused, pages, kept } = await refreshEndlessListing(
    (n) => [
      {
        ...template(`t${String(n).padStart(3, '0')}`),
        components: [
          {
            type: 'BUTTONS',
            buttons: n === 1 ? [otp] : n === 2 ? [{ type: 'URL', deep: 0 }] : n === 3 ? wide : [],
          },
        ],
      },
    ],
    (json) => json.replace('"deep":0', `"deep":${deep}`),
  );
  expect(refused).toBeUndefined();
  expect(pages).toBe(100);
  expect(kept).toHaveLength(100);
  const stored = await pool.query<{ name: string; buttons: unknown }>(
    "select name, buttons from templates where name in ('t001', 't002', 't003') order by name",
  );
  expect(stored.rows.map((row) => row.buttons)).toEqual([[otp], [], []]);
});

/** A prepare of an unknown template: undefined when it passed, the AppError it was refused with otherwise. */
const prepareMiss = (
  deps: Awaited<ReturnType<typeof world>>['deps'],
  workspaceId: string,
  integrationId: string,
  name: string,
) =>
  templates
    .prepare(deps, {
      workspace_id: workspaceId,
      integration_id: integrationId,
      template: { name, language: 'pt_BR', variables: [] as string[], headerMedia: null, buttons: null },
    } as Parameters<typeof templates.prepare>[1])
    .then(
      () => undefined,
      (error: AppError) => error,
    );

it("lists one catalogue at a time per workspace for templates it does not know, and another workspace's meanwhile", async () => {
  const hostile = await world();
  const integrations = await Promise.all([hostile.official(), hostile.official(), hostile.official()]);
  const other = await world();
  const otherIntegration = await other.official();
  const held: ServerResponse[] = [];
  answer = (_req, res) => held.push(res);
  const settled = new Set<string>();
  const prepare = (deps: typeof hostile.deps, workspaceId: string, integrationId: string, name: string) =>
    prepareMiss(deps, workspaceId, integrationId, name).finally(() => settled.add(name));
  const first = prepare(hostile.deps, hostile.workspaceId, integrations[0]!.integration.id, 'nao-existe-0');
  await waitFor(() => held.length >= 1, { what: "the hostile workspace's first listing" });
  // While it is held open: a miss of the same integration joins it; misses of the workspace's other
  // integrations are answered at once from the catalogue as it is, with no listing of their own.
  const joined = prepare(hostile.deps, hostile.workspaceId, integrations[0]!.integration.id, 'nao-existe-0b');
  const others = integrations
    .slice(1)
    .map((stored, i) =>
      prepare(hostile.deps, hostile.workspaceId, stored.integration.id, `nao-existe-${i + 1}`),
    );
  expect(await Promise.all(others)).toMatchObject([
    { status: 400, body: { error: platformTexts.templateNotFound('nao-existe-1', 'pt_BR') } },
    { status: 400, body: { error: platformTexts.templateNotFound('nao-existe-2', 'pt_BR') } },
  ]);
  // Another workspace's listing goes ahead beside it.
  const otherMiss = prepare(other.deps, other.workspaceId, otherIntegration.integration.id, 'nao-existe');
  await waitFor(() => held.length >= 2, { what: "the other workspace's listing" });
  await new Promise((resolve) => setTimeout(resolve, 200));
  expect(held).toHaveLength(2);
  expect(settled.has('nao-existe-0') || settled.has('nao-existe-0b')).toBe(false);
  for (const res of held.splice(0)) json(res, 200, { data: [template('nao-existe-0')] });
  expect(await first).toBeUndefined();
  expect(await joined).toMatchObject({
    status: 400,
    body: { error: platformTexts.templateNotFound('nao-existe-0b', 'pt_BR') },
  });
  await otherMiss;
  expect(held).toHaveLength(0);
});

it('charges a template miss only for a listing it starts', async () => {
  const hostile = await world();
  const stored = await hostile.official();
  const id = stored.integration.id;
  const held: ServerResponse[] = [];
  answer = (_req, res) => held.push(res);
  const first = prepareMiss(hostile.deps, hostile.workspaceId, id, 'nao-existe');
  await waitFor(() => held.length >= 1, { what: 'the first listing' });
  // Twelve more misses join the listing under way, more than the integration's budget of ten. Each
  // looks the template up first, and joins as soon as its lookup has answered.
  let looked = 0;
  const catalogue = hostile.catalogue;
  const counting = {
    ...hostile.deps,
    templates: Object.assign(Object.create(catalogue) as TemplateStore, {
      find: async (...args: Parameters<TemplateStore['find']>) => {
        const found = await catalogue.find(...args);
        looked++;
        return found;
      },
    }),
  };
  const joined = Array.from({ length: 12 }, (_, i) =>
    prepareMiss(counting, hostile.workspaceId, id, `nao-existe-${i}`),
  );
  await waitFor(() => looked === 12, { what: 'the misses looked up' });
  await new Promise((resolve) => setImmediate(resolve));
  for (const res of held.splice(0)) json(res, 200, { data: [] });
  await Promise.all([first, ...joined]);
  // One listing was charged: the next miss still gets one.
  let listings = 0;
  answer = (_req, res) => {
    listings++;
    json(res, 200, { data: [template('aprovado-agora')] });
  };
  expect(await prepareMiss(hostile.deps, hostile.workspaceId, id, 'aprovado-agora')).toBeUndefined();
  expect(listings).toBe(1);

  // A workspace's budget spent by two integrations' listings: a third's miss lists nothing, and its
  // integration keeps its points.
  const [a, b, c] = await Promise.all([hostile.official(), hostile.official(), hostile.official()]);
  listings = 0;
  answer = (_req, res) => {
    listings++;
    json(res, 200, { data: [] });
  };
  for (const { integration } of [a!, b!])
    for (let i = 0; i < 10; i++)
      await prepareMiss(hostile.deps, hostile.workspaceId, integration.id, `gasto-${i}`);
  // The workspace had spent two points above, so the last two were refused.
  expect(listings).toBe(18);
  expect(await prepareMiss(hostile.deps, hostile.workspaceId, c!.integration.id, 'recusado')).toMatchObject({
    status: 400,
    body: { error: platformTexts.templateNotFound('recusado', 'pt_BR') },
  });
  expect(listings).toBe(18);
  expect((await missRefreshes.perIntegration.get(c!.integration.id))?.consumedPoints ?? 0).toBe(0);
  expect((await missRefreshes.perIntegration.get(b!.integration.id))?.consumedPoints).toBe(8);
});

it('refuses a template send whose body with its variables in is longer than a message', async () => {
  const { catalogue, deps, workspaceId, official } = await world();
  const stored = await official();
  // The tenant's catalogue repeats one placeholder; each variable is within the API's 1,024 characters.
  await catalogue.replace(stored.integration.id, [
    {
      name: 'eco',
      language: 'pt_BR',
      status: 'APPROVED',
      body: '{{1}} '.repeat(40),
      header_format: null,
      buttons: [],
    },
  ]);
  const prepare = (variable: string) =>
    templates.prepare(deps, {
      workspace_id: workspaceId,
      integration_id: stored.integration.id,
      template: { name: 'eco', language: 'pt_BR', variables: [variable] },
    } as Parameters<typeof templates.prepare>[1]);

  expect((await prepare('curto')).rendered_text).toBe('curto '.repeat(40));
  const long = 'x'.repeat(1_000);
  await expect(prepare(long)).rejects.toMatchObject({
    status: 400,
    body: { error: platformTexts.templateRenderedTooLong('eco', 40_040, maxRenderedTemplateChars) },
  });
});

it("keeps a thousand characters of a provider's error, however long its answer", async () => {
  const { store, workspaceId } = await world();
  const created = await store.create(workspaceId, {
    channel: 'alt-a',
    config: { base_url: providerUrl, instance: 'i', api_key: 'k' },
    accountId: randomUUID(),
  });
  // Evolution's error shape, with a megabyte of message.
  answer = (_req, res) =>
    json(res, 400, { status: 400, error: 'Bad Request', response: { message: ['é'.repeat(400_000)] } });

  const failed = await sendText(
    { store, guard, logger, providerTimeoutMs: 5_000 },
    {
      workspace_id: workspaceId,
      integration_id: created!.integration.id,
      message_id: randomUUID(),
      to: '+5511944440001',
      text: 'Olá',
    },
  ).then(
    () => undefined,
    (error: unknown) => error as AppError,
  );
  expect(failed).toMatchObject({ status: 502, body: { error: platformTexts.providerFailed('alt-a') } });
  expect(failed!.detail!.length).toBe(providerErrorMaxChars);
  expect(failed!.detail).toMatch(/^alt-a answered 400 to sendText: é+$/);
});
