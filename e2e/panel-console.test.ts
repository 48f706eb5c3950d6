import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createEvolutionInstance } from '@inbox/provider-sandbox';
import { ensurePanelBuilt } from '@inbox/runtime';
import { verifyStandardWebhook } from '@inbox/sdk/webhooks';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Json, useStack } from './support/fixtures.js';

// The panel as an operator uses it: a real (headless) Chromium on the distributed stack's gateway, every
// step through the panel's screens; only the message a workspace's system sends comes through the public
// API, and what the webhook receiver got is read from the receiver itself.

const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
// The panel asks for news by polling: a few of its intervals, never a fixed sleep.
const seen = { timeout: 20_000 };

// The build the gateway serves is made from the sources as they are (a second when it is outdated).
beforeAll(() => ensurePanelBuilt(), 120_000);
const fixture = useStack();

let profile: string;
let browser: BrowserContext;
let page: Page;
const pageErrors: string[] = [];
const elsewhere: string[] = [];
const requestedUrls: string[] = [];

/** What the test learns on the way and the later steps use. */
const state = { workspaceId: '', apiKey: '', webhookSecret: '', conversationId: '', contactId: '' };
const contact = { phone: '+5511933330001', name: 'Maria Painel' };

const adminToken = () => fixture.stack.adminToken;
const panelUrl = (path = '') => `${fixture.stack.gatewayUrl}/panel${path}`;
const nav = (name: string) => page.getByRole('navigation', { name: 'Workspace' }).getByRole('link', { name });

beforeAll(async () => {
  profile = mkdtempSync(join(tmpdir(), 'panel-chromium-'));
  browser = await chromium.launchPersistentContext(profile, {
    executablePath: chromiumPath,
    headless: true,
    viewport: { width: 1280, height: 800 },
    permissions: ['clipboard-read', 'clipboard-write'],
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--no-first-run',
    ],
  });
  await browser.route('**/*', (route) => {
    const url = route.request().url();
    requestedUrls.push(url);
    const { protocol, hostname } = new URL(url);
    if (protocol.startsWith('http') && hostname !== '127.0.0.1') {
      elsewhere.push(url);
      return route.abort();
    }
    return route.continue();
  });
  page = await browser.newPage();
  page.on('pageerror', (error) => pageErrors.push(error.message));
}, 60_000);
afterAll(async () => {
  await browser?.close();
  if (profile) rmSync(profile, { recursive: true, force: true });
});

// Each step waits on a few polls of the panel (every 3 to 5 s) on a machine shared with other work.
describe('the panel, in a browser', { timeout: 90_000 }, () => {
  it('signs in with the admin token, which stays in the tab and never in an address', async () => {
    await page.goto(panelUrl());
    await page.getByLabel('Admin token').fill('not-the-token-at-all');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect
      .poll(() => page.getByRole('alert').textContent(), seen)
      .toBe('Token de administração inválido');

    await page.getByLabel('Admin token').fill(adminToken());
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Workspaces', exact: true }).waitFor(seen);
    expect(await page.evaluate("sessionStorage.getItem('inbox-panel.admin-token')")).toBe(adminToken());
    expect(await page.evaluate('localStorage.length')).toBe(0);
    // A reload keeps the session: the tab still has the token.
    await page.reload();
    await page.getByRole('heading', { name: 'Workspaces', exact: true }).waitFor(seen);
    expect(requestedUrls.filter((url) => url.includes(adminToken()))).toEqual([]);
  });

  it('creates a workspace, shows its key once and copies it', async () => {
    await page.getByLabel('Name', { exact: true }).fill('Panel e2e');
    await page.getByRole('button', { name: 'Create workspace' }).click();
    const shown = page.getByTestId('secret-value');
    await shown.waitFor(seen);
    const key = (await shown.textContent()) ?? '';
    expect(key).toMatch(/^sk_live_[A-Za-z0-9]{40}$/);
    await page.getByRole('button', { name: 'Copy API key' }).click();
    await page.getByRole('button', { name: 'Copied API key' }).waitFor(seen);
    expect(await page.evaluate('navigator.clipboard.readText()')).toBe(key);
    state.apiKey = key;

    const row = page.getByRole('row').filter({ hasText: 'Panel e2e' });
    await row.getByText('active').waitFor(seen);
    // Suspending and reactivating it, as the operator would.
    await row.getByRole('button', { name: 'Suspend Panel e2e' }).click();
    await row.getByText('suspended').waitFor(seen);
    await row.getByRole('button', { name: 'Reactivate Panel e2e' }).click();
    await row.getByText('active').waitFor(seen);

    await page.getByRole('link', { name: 'Open its inbox' }).click();
    state.workspaceId = new URL(page.url()).pathname.split('/')[3]!;
    expect(state.workspaceId).toMatch(/^[0-9a-f-]{36}$/);
    const read = await fixture.stack.admin<Json>('GET', `/admin/v1/workspaces/${state.workspaceId}`);
    expect(read.body).toMatchObject({ name: 'Panel e2e', status: 'active' });
  });

  it("adds an integration from its channel's form, showing the API's own text for what is missing or wrong", async () => {
    await nav('Integrations').click();
    await page.getByText('No integration yet').waitFor(seen);
    await page.getByLabel('Channel').selectOption('alt-a');
    await page.getByLabel('base_url').fill(`${fixture.stack.sandboxUrl}/alt-a`);
    await page.getByLabel('api_key').fill('panel-e2e-key');
    await page.getByRole('button', { name: 'Add and connect' }).click();
    await expect
      .poll(() => page.getByRole('alert').textContent(), seen)
      .toBe('config.instance é obrigatório');

    // The operator created the instance in Evolution's manager first; a typo in its name is Evolution's 404.
    await createEvolutionInstance(fixture.stack.sandboxUrl!, 'panel-e2e', 'panel-e2e-key');
    await page.getByLabel('instance').fill('panel-e2');
    await page.getByRole('button', { name: 'Add and connect' }).click();
    await expect
      .poll(() => page.getByRole('alert').textContent(), seen)
      .toBe(
        'O provedor do canal "alt-a" recusou as credenciais da integração ou não conhece a conta: verifique a configuração',
      );
    await page.getByLabel('instance').fill('panel-e2e');
    await page.getByLabel('Name', { exact: true }).fill('Sandbox alt-a');
    await page.getByRole('button', { name: 'Add and connect' }).click();
    const row = page.getByRole('row').filter({ hasText: 'Sandbox alt-a' });
    await row.getByText('connected').waitFor(seen);
    const listed = await fixture.stack.admin<{ integrations: Json[] }>(
      'GET',
      `/admin/v1/workspaces/${state.workspaceId}/integrations`,
    );
    expect(listed.body.integrations).toMatchObject([
      { channel: 'alt-a', name: 'Sandbox alt-a', status: 'connected' },
    ]);
  });

  it('says why an integration is disconnected when another workspace took its account, and takes it back', async () => {
    // Another workspace connects the same Evolution instance: Evolution now calls that one.
    const other = await fixture.stack.admin<{ workspace_id: string }>('POST', '/admin/v1/workspaces', {
      name: 'Panel e2e, same instance',
    });
    const otherBase = `/admin/v1/workspaces/${other.body.workspace_id}/integrations`;
    const taker = await fixture.stack.admin<{ id: string }>('POST', otherBase, {
      channel: 'alt-a',
      config: {
        base_url: `${fixture.stack.sandboxUrl}/alt-a`,
        instance: 'panel-e2e',
        api_key: 'panel-e2e-key',
      },
    });
    expect(taker.status).toBe(201);
    await page.reload();
    const row = page.getByRole('row').filter({ hasText: 'Sandbox alt-a' });
    await row.getByText('disconnected', { exact: true }).waitFor(seen);
    await row
      .getByText('Another integration of this provider account registered its callback URL')
      .waitFor(seen);

    await row.getByRole('button', { name: 'Connect Sandbox alt-a' }).click();
    await row.getByText('connected', { exact: true }).waitFor(seen);
    expect(await row.getByText('Another integration of this provider account').count()).toBe(0);
    const taken = await fixture.stack.admin<Json>('GET', `${otherBase}/${taker.body.id}`);
    expect(taken.body).toMatchObject({ status: 'disconnected', status_reason: 'callback_taken' });
  });

  it('adds a webhook for two events with a generated secret, shown once', async () => {
    await nav('Settings → Webhooks').click();
    await page.getByText('No webhook yet').waitFor(seen);
    await page.getByLabel('URL').fill(`${fixture.receiver.url}/panel-e2e`);
    await page.getByLabel('All events').uncheck();
    await page.getByLabel('conversation.assigned').check();
    await page.getByLabel('conversation.resolved').check();
    await page.getByLabel('Ordered').check();
    await page.getByLabel('Max deliveries per second').fill('20');
    await page.getByRole('button', { name: 'Create webhook' }).click();
    const secret = page.getByRole('region', { name: 'Signing secret' }).getByTestId('secret-value');
    await secret.waitFor(seen);
    state.webhookSecret = (await secret.textContent()) ?? '';
    expect(state.webhookSecret).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
    await page.getByRole('row').filter({ hasText: '/panel-e2e' }).getByText('enabled').waitFor(seen);

    const listed = await fixture.stack.admin<{ webhooks: Json[] }>(
      'GET',
      `/admin/v1/workspaces/${state.workspaceId}/webhooks`,
    );
    expect(listed.body.webhooks).toMatchObject([
      {
        url: `${fixture.receiver.url}/panel-e2e`,
        events: ['conversation.assigned', 'conversation.resolved'],
        ordered: true,
        max_per_second: 20,
        has_secret: true,
        enabled: true,
      },
    ]);
  });

  it('shows a message sent through the public API in the inbox, without a reload', async () => {
    await nav('Inbox').click();
    await page.getByText('No conversation yet').waitFor(seen);
    const navigations: string[] = [];
    page.on('framenavigated', (frame) => navigations.push(frame.url()));

    const sent = await fixture.stack.api<Json>('/api/v1/send-message', state.apiKey, {
      phone: contact.phone,
      message: 'Olá do painel',
      channel: 'alt-a',
      contactName: contact.name,
    });
    expect(sent.status).toBe(200);
    state.conversationId = sent.body.conversationId as string;
    state.contactId = sent.body.contactId as string;

    const item = page.getByRole('link', { name: new RegExp(contact.name) });
    await item.waitFor(seen);
    expect(navigations).toEqual([]);
    await item.click();
    const thread = page.getByRole('region', { name: 'Conversation', exact: true });
    await thread.getByRole('heading', { name: contact.name }).waitFor(seen);
    await thread.getByRole('list', { name: 'Messages' }).getByText('Olá do painel').waitFor(seen);
    expect(new URL(page.url()).pathname).toBe(
      `/panel/workspaces/${state.workspaceId}/inbox/${state.conversationId}`,
    );
  });

  it('assigns the conversation to a member and resolves it; the log shows both deliveries', async () => {
    await nav('Team').click();
    await page.getByText('No member yet').waitFor(seen);
    const memberForm = page.getByRole('form', { name: 'New member' });
    await memberForm.getByLabel('Name').fill('Ana Lima');
    await memberForm.getByLabel('Email').fill('ana@example.com');
    await memberForm.getByRole('button', { name: 'Add member' }).click();
    await page.getByRole('listitem').filter({ hasText: 'ana@example.com' }).waitFor(seen);

    await nav('Inbox').click();
    await page.getByRole('link', { name: new RegExp(contact.name) }).click();
    const thread = page.getByRole('region', { name: 'Conversation', exact: true });
    await thread.getByRole('heading', { name: contact.name }).waitFor(seen);
    await thread.getByLabel('Assign to').selectOption({ label: 'Ana Lima' });
    await thread.getByRole('button', { name: 'Assign', exact: true }).click();
    await thread.getByText('assigned to Ana Lima').waitFor(seen);
    await thread.getByRole('button', { name: 'Resolve' }).click();
    await thread.getByRole('button', { name: 'Resolve' }).waitFor({ state: 'detached', ...seen });
    await thread.locator('.thread-head').getByText('resolved', { exact: true }).waitFor(seen);

    // The filter shows it among the resolved, and no longer among the open.
    const list = page.getByRole('region', { name: 'Conversations', exact: true });
    await list.getByRole('button', { name: 'Open', exact: true }).click();
    await list.getByText('No open conversation.').waitFor(seen);
    await list.getByRole('button', { name: 'Resolved', exact: true }).click();
    await list.getByRole('link', { name: new RegExp(contact.name) }).waitFor(seen);

    await nav('Settings → Webhooks').click();
    await page.getByRole('link', { name: `${fixture.receiver.url}/panel-e2e` }).click();
    const log = page.getByRole('table', { name: 'Deliveries' });
    const assigned = log.locator('tr[data-event="conversation.assigned"][data-status="delivered"]');
    const resolved = log.locator('tr[data-event="conversation.resolved"][data-status="delivered"]');
    await assigned.waitFor(seen);
    await resolved.waitFor(seen);
    expect(await log.locator('tbody > tr[data-event]').count()).toBe(2);

    await assigned.getByRole('button', { name: 'Attempts' }).click();
    const attempt = page.locator('.attempt').first();
    await attempt.waitFor(seen);
    expect(await attempt.textContent()).toMatch(/Attempt 1 · .* · HTTP 200 · \d+ ms/);
    expect(await attempt.locator('pre').textContent()).toBe('{"ok":true}');

    // What the receiver got is what the panel did, signed with the secret the panel generated.
    const received = fixture.receiver.received.filter((request) =>
      request.rawBody.includes(state.workspaceId),
    );
    expect(received.map((request) => JSON.parse(request.rawBody))).toEqual([
      {
        event: 'conversation.assigned',
        workspace_id: state.workspaceId,
        conversation_id: state.conversationId,
        status: { assigned_to_type: 'human', assigned_to_id: expect.any(String) },
      },
      {
        event: 'conversation.resolved',
        workspace_id: state.workspaceId,
        conversation_id: state.conversationId,
        status: { value: 'resolved' },
      },
    ]);
    for (const request of received)
      expect(
        verifyStandardWebhook(request.headers as Record<string, string>, request.rawBody, state.webhookSecret)
          .ok,
      ).toBe(true);
  });

  it('sends a test event to the endpoint and shows it delivered', async () => {
    await page.getByRole('button', { name: 'Send test event' }).click();
    await page.getByText('Test event scheduled').waitFor(seen);
    const log = page.getByRole('table', { name: 'Deliveries' });
    await log.locator('tr[data-event="webhook.test"][data-status="delivered"]').waitFor(seen);
    const test = fixture.receiver.received.find(
      (request) => request.headers['x-webhook-event'] === 'webhook.test',
    );
    expect(JSON.parse(test!.rawBody)).toMatchObject({
      event: 'webhook.test',
      workspace_id: state.workspaceId,
    });
    expect(
      verifyStandardWebhook(test!.headers as Record<string, string>, test!.rawBody, state.webhookSecret).ok,
    ).toBe(true);
  });

  it('moves a contact across the Kanban board, by drag and drop and from the keyboard', async () => {
    await nav('Funnels').click();
    await page.getByText('No funnel yet').waitFor(seen);
    await page.getByLabel('Name', { exact: true }).fill('Vendas');
    const stages = [
      ['novo', 'Novo'],
      ['negociacao', 'Negociação'],
      ['ganho', 'Ganho'],
    ] as const;
    await page.getByRole('button', { name: 'Add a stage' }).click();
    for (const [i, [key, name]] of stages.entries()) {
      await page.getByLabel(`Stage ${i + 1} key`).fill(key);
      await page.getByLabel(`Stage ${i + 1} name`).fill(name);
    }
    await page.getByRole('button', { name: 'Create funnel' }).click();
    const board = page.getByRole('region', { name: 'Board of Vendas' });
    await board.getByRole('region', { name: 'Negociação' }).waitFor(seen);
    const pipelineId = new URL(page.url()).pathname.split('/').at(-1)!;

    // The contact enters the funnel from its conversation; the move shows there as a system event.
    await nav('Inbox').click();
    await page.getByRole('link', { name: new RegExp(contact.name) }).click();
    const thread = page.getByRole('region', { name: 'Conversation', exact: true });
    await thread.getByLabel('Stage').selectOption({ label: 'Novo' });
    await thread.getByRole('button', { name: 'Move lead' }).click();
    await thread.getByText('Vendas: Novo').waitFor(seen);
    const systemEvent = thread.getByRole('listitem', { name: 'System event' });
    await systemEvent.waitFor(seen);
    expect(await systemEvent.textContent()).toContain('Lead movido para "Novo" no pipeline "Vendas"');
    expect(
      await systemEvent.evaluate(
        (element) =>
          (
            element.ownerDocument.defaultView as unknown as {
              getComputedStyle(of: unknown): { fontStyle: string };
            }
          ).getComputedStyle(element).fontStyle,
      ),
    ).toBe('italic');

    await nav('Funnels').click();
    const column = (name: string) => board.getByRole('region', { name, exact: true });
    const card = board.getByRole('listitem', { name: new RegExp(`^${contact.name}, in `) });
    await column('Novo')
      .getByRole('listitem', { name: `${contact.name}, in Novo` })
      .waitFor(seen);
    const stageOf = async () =>
      (
        await fixture.stack.admin<{ stages: Array<{ stage: string }> }>(
          'GET',
          `/admin/v1/workspaces/${state.workspaceId}/contacts/${state.contactId}`,
        )
      ).body.stages.map((position) => position.stage);

    // A card shows in its new column at once; the panel says when the move is done.
    const done = (stage: string) =>
      page
        .getByRole('status')
        .filter({ hasText: `${contact.name} moved to ${stage}.` })
        .waitFor(seen);
    await card.dragTo(column('Negociação'));
    await done('Negociação');
    const inNegotiation = column('Negociação').getByRole('listitem', {
      name: `${contact.name}, in Negociação`,
    });
    expect(await inNegotiation.getAttribute('aria-busy')).toBe('false');
    expect(await stageOf()).toEqual(['negociacao']);

    await inNegotiation.focus();
    await page.keyboard.press('ArrowRight');
    await done('Ganho');
    const won = column('Ganho').getByRole('listitem', { name: `${contact.name}, in Ganho` });
    expect(await won.getAttribute('aria-busy')).toBe('false');
    // The card keeps the focus in its new column, so that it can move on.
    expect(await won.evaluate((element) => element === element.ownerDocument.activeElement)).toBe(true);
    expect(await stageOf()).toEqual(['ganho']);

    const history = await fixture.stack.admin<{ moves: Json[] }>(
      'GET',
      `/admin/v1/workspaces/${state.workspaceId}/pipelines/${pipelineId}/contacts/${state.contactId}/history`,
    );
    expect(history.body.moves.map((move) => [move.from_stage, move.to_stage, move.moved_by])).toEqual([
      [null, 'novo', 'admin: painel'],
      ['novo', 'negociacao', 'admin: painel'],
      ['negociacao', 'ganho', 'admin: painel'],
    ]);
  });

  it('rotates the API key, saying the old one is revoked at once', async () => {
    await nav('Settings → Workspace').click();
    await page.getByRole('button', { name: 'Rotate API key' }).click();
    await page.getByText('The current key is revoked immediately').waitFor(seen);
    await page.getByRole('button', { name: 'Rotate now' }).click();
    const key = (await page.getByTestId('secret-value').textContent()) ?? '';
    expect(key).toMatch(/^sk_live_/);
    const body = { phone: contact.phone, message: 'depois da rotação', channel: 'alt-a' };
    expect((await fixture.stack.api('/api/v1/send-message', state.apiKey, body)).status).toBe(401);
    expect((await fixture.stack.api('/api/v1/send-message', key, body)).status).toBe(200);
  });

  it('fits a phone-width screen: the inbox shows the list, then the thread, never wider than the screen', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(panelUrl(`/workspaces/${state.workspaceId}/inbox`));
    const list = page.getByRole('region', { name: 'Conversations', exact: true });
    await list.getByRole('link', { name: new RegExp(contact.name) }).waitFor(seen);
    const overflow = () => page.evaluate<number>('document.documentElement.scrollWidth - window.innerWidth');
    expect(await overflow()).toBeLessThanOrEqual(0);
    await list.getByRole('link', { name: new RegExp(contact.name) }).click();
    await page.getByRole('link', { name: '← Conversations' }).waitFor(seen);
    expect(await list.isVisible()).toBe(false);
    expect(await overflow()).toBeLessThanOrEqual(0);
    await page.setViewportSize({ width: 1280, height: 800 });
  });

  it('loaded nothing from any other host and raised no error', () => {
    expect(elsewhere).toEqual([]);
    expect(pageErrors).toEqual([]);
  });
});
