// `npm run panel:screenshots`: the pictures of the panel in docs/panel/, taken from the real thing. It
// starts the distributed stack (NATS, Postgres and Redis from the binaries on PATH, as the tests do), fills
// a workspace with believable data through the admin and public APIs and the provider sandbox, then opens
// each main screen in headless Chromium (CHROMIUM_PATH, default /usr/bin/chromium) and saves a PNG.
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { createEvolutionInstance } from '@inbox/provider-sandbox';
import { ensurePanelBuilt, startStack } from '@inbox/runtime';
import { freePort, type LocalServer, startNats, startPostgres, startRedis, waitFor } from '@inbox/testkit';
import { chromium, type Page } from 'playwright-core';

const outDir = fileURLToPath(new URL('../docs/panel/', import.meta.url));
const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const adminToken = `adm_${randomBytes(16).toString('hex')}`;
type Json = Record<string, unknown>;

async function call<T = Json>(url: string, method: string, body?: unknown, token = adminToken): Promise<T> {
  const response = await fetch(url, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const answer = (await response.json()) as T;
  if (!response.ok)
    throw new Error(`${method} ${url} answered ${response.status}: ${JSON.stringify(answer)}`);
  return answer;
}

/** A receiver that acknowledges every webhook, so the delivery log has something to show. */
async function startReceiver() {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"received":true}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => server.close() };
}

async function seed(gateway: string, sandbox: string, receiver: string) {
  const admin = (path: string, method: string, body?: unknown) => call(`${gateway}${path}`, method, body);
  const workspace = await admin('/admin/v1/workspaces', 'POST', { name: 'Acme Store' });
  const id = workspace.workspace_id as string;
  const ws = `/admin/v1/workspaces/${id}`;
  const suspended = await admin('/admin/v1/workspaces', 'POST', { name: 'Beta Café' });
  await admin(`/admin/v1/workspaces/${suspended.workspace_id}`, 'PATCH', { status: 'suspended' });
  const apiKey = randomBytes(8).toString('hex');
  await createEvolutionInstance(sandbox, 'acme', apiKey);
  await admin(`${ws}/integrations`, 'POST', {
    channel: 'alt-a',
    name: 'WhatsApp (sandbox)',
    config: { base_url: `${sandbox}/alt-a`, instance: 'acme', api_key: apiKey },
  });
  const webhook = await admin(`${ws}/webhooks`, 'POST', {
    url: `${receiver}/hooks/inbox`,
    events: ['*'],
    secret: `whsec_${randomBytes(24).toString('base64')}`,
    ordered: true,
  });
  const ana = await admin(`${ws}/members`, 'POST', { name: 'Ana Lima', email: 'ana@acme.example' });
  await admin(`${ws}/members`, 'POST', { name: 'Bruno Costa', email: 'bruno@acme.example' });
  await admin(`${ws}/agents`, 'POST', { name: 'Bia (AI)' });

  const key = workspace.api_key as string;
  const send = (phone: string, message: string, contactName: string) =>
    call(`${gateway}/api/v1/send-message`, 'POST', { phone, message, channel: 'alt-a', contactName }, key);
  const maria = await send(
    '+5511987650001',
    'Olá, Maria! Seu pedido #1042 saiu para entrega.',
    'Maria Souza',
  );
  const joao = await send('+5511987650002', 'Oi João, tudo certo com a troca do tamanho?', 'João Pereira');
  const carla = await send('+5511987650003', 'Carla, seu cupom de 10% vale até sexta.', 'Carla Dias');
  await call(`${sandbox}/_sandbox/inbound`, 'POST', {
    channel: 'alt-a',
    account: 'acme',
    from: '5511987650001',
    name: 'Maria Souza',
    text: 'Obrigada! Chega hoje ainda?',
  });
  await admin(`${ws}/conversations/${maria.conversationId}/messages`, 'POST', {
    text: 'Chega sim, até as 18h. Qualquer coisa é só chamar.',
    sender_name: 'Ana Lima',
  });
  await admin(`${ws}/conversations/${joao.conversationId}/assign`, 'POST', { type: 'human', id: ana.id });
  await admin(`${ws}/conversations/${carla.conversationId}/resolve`, 'POST');

  const pipeline = await admin(`${ws}/pipelines`, 'POST', {
    name: 'Vendas',
    stages: [
      { key: 'novo', name: 'Novo' },
      { key: 'negociacao', name: 'Negociação' },
      { key: 'ganho', name: 'Ganho' },
    ],
  });
  const board = `${ws}/pipelines/${pipeline.id}/contacts`;
  await admin(`${board}/${maria.contactId}`, 'PUT', {
    stage: 'negociacao',
    conversation_id: maria.conversationId,
  });
  await admin(`${board}/${joao.contactId}`, 'PUT', { stage: 'novo' });
  await admin(`${board}/${carla.contactId}`, 'PUT', { stage: 'ganho' });
  // The log shows what was delivered: wait until the receiver has acknowledged the events so far.
  await waitFor(
    async () => {
      const { deliveries } = await admin(`${ws}/webhooks/${webhook.id}/deliveries`, 'GET');
      return (
        (deliveries as Json[]).length >= 6 && (deliveries as Json[]).every((d) => d.status === 'delivered')
      );
    },
    { timeoutMs: 30_000, what: 'the webhook deliveries' },
  );
  return { id, mariaConversation: maria.conversationId as string, webhookId: webhook.id as string };
}

async function shoot(page: Page, name: string) {
  // Times and ids change from run to run; the layout is what the pictures are for.
  await page.screenshot({ path: `${outDir}${name}.png`, fullPage: name !== 'inbox-phone' });
  console.log(`docs/panel/${name}.png`);
}

const servers: LocalServer[] = [];
let stopStack: (() => Promise<void>) | undefined;
let closeReceiver: (() => void) | undefined;
try {
  mkdirSync(outDir, { recursive: true });
  await ensurePanelBuilt(console.log);
  const [nats, postgres, redis] = await Promise.all([startNats(), startPostgres(), startRedis()]);
  servers.push(nats, postgres, redis);
  const [gateway, connector, messaging, pipeline, dispatcher, sandbox] = await Promise.all(
    Array.from({ length: 6 }, () => freePort()),
  );
  const receiver = await startReceiver();
  closeReceiver = receiver.close;
  const stack = await startStack({
    busUrl: nats.url,
    databaseUrl: postgres.url,
    redisUrl: redis.url,
    ports: {
      gateway: gateway!,
      connector: connector!,
      messaging: messaging!,
      pipeline: pipeline!,
      dispatcher: dispatcher!,
      sandbox: sandbox!,
    },
    adminToken,
    encryptionKey: randomBytes(32).toString('base64'),
    outboundAllowedCidrs: '127.0.0.0/8',
    logLevel: 'warn',
  });
  stopStack = stack.stop;
  const data = await seed(stack.gatewayUrl, stack.sandboxUrl!, receiver.url);

  const browser = await chromium.launch({
    executablePath: chromiumPath,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--no-first-run',
    ],
  });
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  const panel = (path: string) => page.goto(`${stack.gatewayUrl}/panel${path}`);
  const nav = (name: string) =>
    page.getByRole('navigation', { name: 'Workspace' }).getByRole('link', { name });

  await panel('');
  await page.getByLabel('Admin token').waitFor();
  await shoot(page, 'sign-in');
  await page.getByLabel('Admin token').fill(adminToken);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('row').filter({ hasText: 'Beta Café' }).waitFor();
  await page.getByLabel('Name', { exact: true }).fill('Gamma Books');
  await page.getByRole('button', { name: 'Create workspace' }).click();
  await page.getByTestId('secret-value').waitFor();
  await shoot(page, 'workspaces');

  await panel(`/workspaces/${data.id}/inbox/${data.mariaConversation}`);
  await page.getByRole('listitem', { name: 'System event' }).waitFor();
  await page.getByText('Chega sim, até as 18h').waitFor();
  await shoot(page, 'inbox');

  await nav('Funnels').click();
  await page.getByRole('listitem', { name: 'Carla Dias, in Ganho' }).waitFor();
  await shoot(page, 'funnels');

  await nav('Integrations').click();
  await page.getByRole('button', { name: 'Disconnect WhatsApp (sandbox)' }).waitFor();
  await shoot(page, 'integrations');

  await nav('Team').click();
  await page.getByText('bruno@acme.example').waitFor();
  await shoot(page, 'team');

  await nav('Settings → Workspace').click();
  await page.getByRole('button', { name: 'Rotate API key' }).click();
  await shoot(page, 'settings-workspace');

  await nav('Settings → Webhooks').click();
  await page
    .getByRole('link', { name: /hooks\/inbox/ })
    .first()
    .waitFor();
  await shoot(page, 'webhooks');
  await panel(`/workspaces/${data.id}/settings/webhooks/${data.webhookId}`);
  const log = page.getByRole('table', { name: 'Deliveries' });
  await log
    .locator('tr[data-event="conversation.resolved"]')
    .getByRole('button', { name: 'Attempts' })
    .click();
  await page.locator('.attempt').first().waitFor();
  await shoot(page, 'webhook-log');

  await page.setViewportSize({ width: 390, height: 844 });
  await panel(`/workspaces/${data.id}/inbox/${data.mariaConversation}`);
  await page.getByText('Chega sim, até as 18h').waitFor();
  await shoot(page, 'inbox-phone');
  await browser.close();
} finally {
  await stopStack?.();
  closeReceiver?.();
  await Promise.all(servers.map((server) => server.stop()));
}
