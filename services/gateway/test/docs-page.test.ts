import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openApiDocument, routes } from '@inbox/contracts';
import type { HostedService } from '@inbox/service-kit';
import { type BrowserContext, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hostGateway } from './host-gateway.js';

// The docs page as a person sees it: a real (headless) Chromium opens /docs on a running gateway.

const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const publicRoutes = routes.filter((route) => route.access === 'workspace-key');

let gateway: HostedService;
let url: string;
let profile: string;
let browser: BrowserContext;

beforeAll(async () => {
  gateway = await hostGateway({ adminToken: 'adm_docs_page_test_token' });
  url = gateway.http.url;
  profile = mkdtempSync(join(tmpdir(), 'docs-page-chromium-'));
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
});
afterAll(async () => {
  await browser?.close();
  if (profile) rmSync(profile, { recursive: true, force: true });
  await gateway?.stop();
});

describe('the API documentation', () => {
  it('serves the OpenAPI document at /openapi.json to anyone', async () => {
    const response = await fetch(`${url}/openapi.json`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    const served = (await response.json()) as { openapi: string };
    expect(served.openapi).toBe('3.1.0');
    expect(served).toEqual(JSON.parse(JSON.stringify(openApiDocument())));
    expect((await fetch(`${url}/openapi.json`, { method: 'POST' })).status).toBe(405);
  });

  it('serves /docs with every script from the gateway itself', async () => {
    const response = await fetch(`${url}/docs`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/html/);
    const html = await response.text();
    expect(html).not.toMatch(/https?:\/\//);
    const scripts = [...html.matchAll(/<script[^>]*\bsrc="([^"]+)"/g)].map((match) => match[1]!);
    expect(scripts).toEqual(['/docs/api-reference.js']);
    const bundle = await fetch(`${url}${scripts[0]}`);
    expect(bundle.status).toBe(200);
    expect(bundle.headers.get('content-type')).toMatch(/javascript/);
  });

  it('renders the four public endpoints in a browser, asking nothing of any other host', async () => {
    const elsewhere: string[] = [];
    await browser.route('**/*', (route) => {
      const { protocol, hostname } = new URL(route.request().url());
      const loopback = hostname === '127.0.0.1' || hostname === 'localhost' || hostname === '[::1]';
      if (protocol.startsWith('http') && !loopback) {
        elsewhere.push(route.request().url());
        return route.abort();
      }
      return route.continue();
    });
    const page = await browser.newPage();
    const failures: string[] = [];
    page.on('pageerror', (error) => failures.push(error.message));
    await page.goto(`${url}/docs`);
    expect(publicRoutes).toHaveLength(4);
    // The sidebar lists every operation by its summary; the first one is shown open, with its path.
    for (const route of publicRoutes) {
      await expect
        .poll(() => page.getByText(route.summary, { exact: true }).first().isVisible(), { timeout: 20_000 })
        .toBe(true);
    }
    await expect.poll(() => page.getByText(publicRoutes[0]!.path).first().isVisible()).toBe(true);
    expect(failures).toEqual([]);
    expect(elsewhere).toEqual([]);
    await page.close();
  }, 60_000);
});
