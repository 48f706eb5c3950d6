import { platformTexts } from '@inbox/contracts';
import { createHttpApp, createLogger, finishHttpApp, listen, type RunningServer } from '@inbox/service-kit';
import { waitFor } from '@inbox/testkit';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { setUnderWay, workspaceInFlight } from '../src/handlers/workspace-in-flight.js';

const max = 3;
let http: RunningServer;
let open: () => void = () => undefined;
const gate = new Promise<void>((resolve) => {
  open = resolve;
});
let underWay = 0;

beforeAll(async () => {
  const logger = createLogger('gateway', { level: 'silent' });
  const app = createHttpApp({ logger });
  app.use((req, res, next) => {
    res.locals.workspaceId = req.get('x-workspace') ?? '';
    next();
  });
  // As the gateway's routes do: the work goes on downstream whether or not the client waits for it.
  app.post('/send', workspaceInFlight(max), async (_req, res) => {
    underWay += 1;
    await setUnderWay(
      res,
      gate.then(() => {
        underWay -= 1;
      }),
    );
    res.json({ ok: true });
  });
  finishHttpApp(app, logger);
  http = await listen(app, 0, '127.0.0.1');
});
afterAll(async () => {
  open();
  await http?.close(100);
});

const send = (workspace: string, signal?: AbortSignal) =>
  fetch(`${http.url}/send`, { method: 'POST', headers: { 'x-workspace': workspace }, signal });

it("answers 503 past a workspace's requests under way, not another workspace's, until their work has settled", async () => {
  const aborted = new AbortController();
  const held = [send('a', aborted.signal).catch(() => 'aborted'), send('a'), send('a')];
  await waitFor(() => underWay === 3, { what: 'three requests under way' });
  const refused = await send('a');
  expect(refused.status).toBe(503);
  expect(refused.headers.get('retry-after')).toBe('1');
  expect(await refused.json()).toEqual({ error: platformTexts.workspaceRequestsInFlight(max) });

  const other = send('b');
  await waitFor(() => underWay === 4, { what: "another workspace's request under way" });

  // A client that hangs up leaves its work going on: its place is not given back.
  aborted.abort();
  expect(await held[0]).toBe('aborted');
  await new Promise((resolve) => setTimeout(resolve, 100));
  expect((await send('a')).status).toBe(503);

  open();
  await waitFor(() => underWay === 0, { what: 'the work settled' });
  expect((await other).status).toBe(200);
  expect((await send('a')).status).toBe(200);
  await Promise.all(held);
});
