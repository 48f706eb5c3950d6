import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callApi, onlyEvent, useStack } from './support/fixtures.js';

// The live chat round trip as a visitor lives it: a real (headless) Chromium opens the demo page the
// connector serves, starts a chat and writes; the workspace's webhook receiver gets message.received;
// an external send through the public API appears in the open page, pushed over the widget's stream.

const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const seen = { timeout: 20_000 };
const fixture = useStack();

let profile: string;
let browser: BrowserContext;
let page: Page;
const pageErrors: string[] = [];

beforeAll(async () => {
  profile = mkdtempSync(join(tmpdir(), 'livechat-chromium-'));
  browser = await chromium.launchPersistentContext(profile, {
    executablePath: chromiumPath,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--no-first-run',
    ],
  });
  page = browser.pages()[0] ?? (await browser.newPage());
  page.on('pageerror', (error) => pageErrors.push(error.message));
}, 60_000);

afterAll(async () => {
  await browser?.close();
  if (profile) rmSync(profile, { recursive: true, force: true });
});

describe('the live chat widget in Chromium', () => {
  it('a visitor writes from the demo page, the webhook gets it, and an external send reply appears', async () => {
    const ws = await fixture.stack.admin<{ workspace_id: string; api_key: string }>(
      'POST',
      '/admin/v1/workspaces',
      {
        name: 'livechat-e2e',
      },
    );
    const workspaceId = ws.body.workspace_id;
    const connectorUrl = fixture.stack.connectorUrl;
    const integration = await fixture.stack.admin<{ id: string }>(
      'POST',
      `/admin/v1/workspaces/${workspaceId}/integrations`,
      { channel: 'livechat', config: { name: 'Loja Demo', allowed_origins: connectorUrl } },
    );
    expect(integration.status).toBe(201);
    await fixture.stack.admin('POST', `/admin/v1/workspaces/${workspaceId}/webhooks`, {
      url: `${fixture.receiver.url}/livechat`,
      events: ['*'],
    });

    await page.goto(`${connectorUrl}/livechat/${integration.body.id}/demo`);
    await page.getByRole('button', { name: 'Chat' }).click();
    await page.getByLabel('Your name').fill('Visitante Chromium');
    await page.getByRole('button', { name: 'Start chat' }).click();
    await page.getByLabel('Message').fill('Olá, vocês entregam amanhã?');
    await page.getByRole('button', { name: 'Send' }).click();
    // The visitor's own line comes back over the stream.
    const log = page.getByRole('log');
    await log.locator('li[data-author="visitor"]', { hasText: 'Olá, vocês entregam amanhã?' }).waitFor(seen);

    const received = await onlyEvent(fixture.receiver, workspaceId, 'message.received');
    expect(received).toMatchObject({
      contact: { phone: null, name: 'Visitante Chromium' },
      message: { text: 'Olá, vocês entregam amanhã?', type: 'text' },
      integration: { id: integration.body.id, provider: 'livechat' },
    });

    const reply = await callApi(fixture.stack, 'POST', '/api/external/messages/send', ws.body.api_key, {
      conversation_id: received!.conversation_id,
      text: 'Entregamos sim! <b>até 18h</b>',
    });
    expect(reply.status).toBe(200);
    await log
      .locator('li[data-author="operator"]', { hasText: 'Entregamos sim! <b>até 18h</b>' })
      .waitFor(seen);
    // Shown as text, never as markup.
    expect(await log.locator('b').count()).toBe(0);
    expect(pageErrors).toEqual([]);
  });
});
