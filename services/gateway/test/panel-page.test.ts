import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '@inbox/service-kit';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { panelPage } from '../src/handlers/panel-page.js';

// How the gateway serves the panel's build, on a stand-in build: the page for every screen's address,
// hashed assets cached for good, and a policy that lets the page reach nothing but this gateway. The real
// build, in a browser, is e2e/panel-console.test.ts.

const logger = createLogger('panel-page-test', { level: 'silent' });
const page =
  '<!doctype html><title>panel</title><script type="module" src="/panel/assets/index-abc123.js"></script>';

let build: string;
let servers: Server[] = [];

async function serve(directory: string | null): Promise<string> {
  const app = express().use(panelPage(logger, directory));
  const server = await new Promise<Server>((resolve) => {
    const listening = app.listen(0, '127.0.0.1', () => resolve(listening));
  });
  servers.push(server);
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

beforeAll(() => {
  build = mkdtempSync(join(tmpdir(), 'panel-build-'));
  mkdirSync(join(build, 'assets'));
  writeFileSync(join(build, 'index.html'), page);
  writeFileSync(join(build, 'assets', 'index-abc123.js'), 'console.log("panel")');
  writeFileSync(join(build, 'favicon.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');
  writeFileSync(join(build, '.source-digest'), 'abc');
});
afterAll(async () => {
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  servers = [];
  rmSync(build, { recursive: true, force: true });
});

describe('the panel at /panel', () => {
  it("answers every screen's address with the page, never cached, under a same-origin policy", async () => {
    const url = await serve(build);
    for (const path of [
      '/panel',
      '/panel/',
      '/panel/workspaces',
      '/panel/workspaces/x/settings/webhooks/y',
    ]) {
      const response = await fetch(`${url}${path}`);
      expect(response.status, path).toBe(200);
      expect(response.headers.get('content-type')).toMatch(/^text\/html/);
      expect(response.headers.get('cache-control')).toBe('no-cache');
      expect(await response.text()).toBe(page);
      const policy = response.headers.get('content-security-policy') ?? '';
      expect(policy).toContain("default-src 'self'");
      expect(policy).toContain("connect-src 'self'");
      expect(policy).toContain("frame-ancestors 'none'");
      expect(policy).not.toMatch(/https?:|\*|unsafe/);
      expect(response.headers.get('x-content-type-options')).toBe('nosniff');
      expect(response.headers.get('referrer-policy')).toBe('no-referrer');
    }
  });

  it('serves the hashed assets for good, and 404 for an asset the build does not have', async () => {
    const url = await serve(build);
    const asset = await fetch(`${url}/panel/assets/index-abc123.js`);
    expect(asset.status).toBe(200);
    expect(asset.headers.get('content-type')).toMatch(/javascript/);
    expect(asset.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(await asset.text()).toBe('console.log("panel")');
    expect((await fetch(`${url}/panel/assets/index-gone.js`)).status).toBe(404);
    const icon = await fetch(`${url}/panel/favicon.svg`);
    expect(icon.headers.get('content-type')).toMatch(/^image\/svg\+xml/);
    expect(icon.headers.get('content-security-policy')).toContain("default-src 'self'");
    // The build's own bookkeeping is not served: the address is a screen's like any other.
    expect(await (await fetch(`${url}/panel/.source-digest`)).text()).toBe(page);
    expect((await fetch(`${url}/panel-not`)).status).toBe(404);
  });

  it('tells how to build it when its build is missing, and is absent when there is no panel at all', async () => {
    const missing = await fetch(`${await serve(join(build, 'nothing-here'))}/panel/workspaces`);
    expect(missing.status).toBe(503);
    expect(await missing.text()).toMatch(/npm run build/);
    expect((await fetch(`${await serve(null)}/panel`)).status).toBe(404);
  });
});
