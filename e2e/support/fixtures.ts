import { createHash } from 'node:crypto';
import { type EventType, eventCatalogue } from '@inbox/contracts';
import { createEvolutionInstance } from '@inbox/provider-sandbox';
import { waitFor } from '@inbox/testkit';
import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import { startReceiver, startTestStack, type TestStack } from './test-stack.js';

export type Json = Record<string, unknown>;
type Receiver = Awaited<ReturnType<typeof startReceiver>>;

/**
 * The distributed stack and a real webhook receiver for one test file: started before its tests,
 * stopped after. Read `stack` and `receiver` inside tests (they exist once `beforeAll` has run).
 */
export function useStack(
  overrides: Parameters<typeof startTestStack>[0] | (() => Parameters<typeof startTestStack>[0]) = {},
  answer?: Parameters<typeof startReceiver>[0],
): {
  stack: TestStack;
  receiver: Receiver;
} {
  const context = {} as { stack: TestStack; receiver: Receiver };
  beforeAll(async () => {
    context.receiver = await startReceiver(answer);
    context.stack = await startTestStack(typeof overrides === 'function' ? overrides() : overrides);
  });
  afterAll(async () => {
    await context.stack?.stop();
    await context.receiver?.close();
  });
  return context;
}

/** The webhook payloads one workspace received, in arrival order, each checked against its schema. */
export function eventsOf(receiver: Receiver, workspaceId: string, type?: string): Json[] {
  return receiver.received
    .map((request) => JSON.parse(request.rawBody) as Json)
    .filter((payload) => payload.workspace_id === workspaceId && (!type || payload.event === type))
    .map((payload) => eventCatalogue[payload.event as EventType].parse(payload) as Json);
}

/** The one event of a type the workspace has received, once it has arrived (more than one fails the wait). */
export async function onlyEvent(receiver: Receiver, workspaceId: string, type: string): Promise<Json> {
  await waitFor(() => eventsOf(receiver, workspaceId, type).length === 1, { what: `one ${type}` });
  return eventsOf(receiver, workspaceId, type)[0]!;
}

/** A public API call with any method, as a workspace's key. */
export async function callApi(
  stack: TestStack,
  method: string,
  path: string,
  key: string,
  body?: unknown,
  headers: Record<string, string> = {},
) {
  const response = await fetch(`${stack.gatewayUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Json };
}

/** A call to the provider sandbox's control API. */
export async function sandbox(stack: TestStack, path: string, body: Json) {
  const response = await fetch(`${stack.sandboxUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Json };
}

/** What the sandbox received for a number (digits), optionally on one channel, oldest first. */
export async function sentTo(stack: TestStack, digits: string, channel?: string): Promise<Json[]> {
  const query = new URLSearchParams({ to: digits, ...(channel ? { channel } : {}) });
  return (await (await fetch(`${stack.sandboxUrl}/_sandbox/sent?${query}`)).json()) as Json[];
}

/** As a gateway that died before recording its answers leaves them: the workspace's key records gone. */
export async function forgetIdempotencyKeys(stack: TestStack, workspaceId: string): Promise<void> {
  const db = new pg.Client({ connectionString: stack.databaseUrl });
  await db.connect();
  try {
    await db.query('delete from gateway.idempotency_keys where workspace_id = $1', [workspaceId]);
  } finally {
    await db.end();
  }
}

/**
 * A Cloud API integration's config against the stack's sandbox, every credential derived from the phone
 * number id (the app secret too, unless given).
 */
export function officialConfig(
  stack: TestStack,
  account: string,
  appSecret = `app-secret-${createHash('sha256').update(account).digest('hex').slice(0, 12)}`,
) {
  return {
    base_url: `${stack.sandboxUrl}/chat-official`,
    phone_number_id: account,
    waba_id: `waba-${account}`,
    access_token: `token-${account}`,
    app_secret: appSecret,
    verify_token: `verify-${account}`,
  };
}

/** An alt-a integration's config, for an instance the sandbox's Evolution has: an operator created it. */
export async function evolutionConfig(stack: TestStack, instance: string, apiKey: string) {
  if (!stack.sandboxUrl) throw new Error('this stack runs no sandbox');
  await createEvolutionInstance(stack.sandboxUrl, instance, apiKey);
  return { base_url: `${stack.sandboxUrl}/alt-a`, instance, api_key: apiKey };
}
