// The keyed load of the fault suite: send-message, send-template and external send, each request with
// its own Idempotency-Key and a text that carries that key, so the provider sandbox's sent log tells
// which key each provider send belongs to.
import { randomBytes } from 'node:crypto';
import { createEvolutionInstance } from '@inbox/provider-sandbox';
import { callUntilFinal, type KeyedRequest, type KeyOutcome } from './keyed-client.js';

/** Where the load goes and who it is: what the stack started and the admin token it was given. */
export interface LoadTarget {
  gatewayUrl: string;
  sandboxUrl: string;
  adminToken: string;
}

export interface LoadWorkspace {
  id: string;
  apiKey: string;
  /** Conversations opened before the load, for external send. */
  conversations: string[];
}

const templateName = 'chaos_aviso';
const keyPattern = /chaos-[0-9a-f]{8}-\d+/;

/** The key a provider send belongs to, read from what the sandbox received. */
export function keyOfProviderSend(body: unknown): string | undefined {
  return JSON.stringify(body).match(keyPattern)?.[0];
}

/** A POST that must succeed (the load's setup), its JSON answer. */
async function post(url: string, body: unknown, token?: string) {
  const response = await fetch(url, {
    method: 'POST',
    headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const answer = (await response.json()) as Record<string, unknown>;
  if (!response.ok) throw new Error(`POST ${url} answered ${response.status}: ${JSON.stringify(answer)}`);
  return answer;
}

/**
 * A workspace with an alt-a integration (send-message and external send), a chat-official one with an
 * approved template (send-template), `message.sent` webhooks to `webhookUrl`, and a few conversations.
 */
export async function prepareLoadWorkspace(target: LoadTarget, webhookUrl: string): Promise<LoadWorkspace> {
  const admin = (path: string, body: unknown) => post(`${target.gatewayUrl}${path}`, body, target.adminToken);
  const suffix = randomBytes(4).toString('hex');
  const created = await admin('/admin/v1/workspaces', { name: `chaos ${suffix}` });
  const id = String(created.workspace_id);
  const apiKey = String(created.api_key);
  await createEvolutionInstance(target.sandboxUrl, `chaos-${suffix}`, `k-${suffix}`);
  await admin(`/admin/v1/workspaces/${id}/integrations`, {
    channel: 'alt-a',
    config: { base_url: `${target.sandboxUrl}/alt-a`, instance: `chaos-${suffix}`, api_key: `k-${suffix}` },
  });
  const phoneNumberId = `chaos-pn-${suffix}`;
  await post(`${target.sandboxUrl}/_sandbox/templates`, {
    account: phoneNumberId,
    name: templateName,
    language: 'pt_BR',
    body: 'Aviso {{1}}',
  });
  await admin(`/admin/v1/workspaces/${id}/integrations`, {
    channel: 'chat-official',
    config: {
      base_url: `${target.sandboxUrl}/chat-official`,
      phone_number_id: phoneNumberId,
      // The sandbox's WABA of a number is waba-<phone_number_id>.
      waba_id: `waba-${phoneNumberId}`,
      access_token: `token-${suffix}`,
      app_secret: `secret-${suffix}`,
      verify_token: `verify-${suffix}`,
    },
  });
  await admin(`/admin/v1/workspaces/${id}/webhooks`, { url: webhookUrl, events: ['message.sent'] });
  const conversations: string[] = [];
  for (let i = 0; i < 8; i++) {
    const opened = await post(
      `${target.gatewayUrl}/api/v1/send-message`,
      { phone: `+55119700${String(i).padStart(5, '0')}`, message: 'abre a conversa', channel: 'alt-a' },
      apiKey,
    );
    conversations.push(String(opened.conversationId));
  }
  return { id, apiKey, conversations };
}

/** The n-th request of a run: half send-message, a quarter each send-template and external send. */
export function nthRequest(runId: string, n: number, workspace: LoadWorkspace): KeyedRequest {
  const key = `chaos-${runId}-${n}`;
  const phone = `+55119${String(80_000_000 + (n % 5_000)).padStart(8, '0')}`;
  switch (n % 4) {
    case 1:
      return {
        key,
        kind: 'send-template',
        path: '/api/v1/send-template',
        body: { phone, channel: 'chat-official', templateName, language: 'pt_BR', variables: [key] },
      };
    case 3:
      return {
        key,
        kind: 'external-send',
        path: '/api/external/messages/send',
        body: { conversation_id: workspace.conversations[n % workspace.conversations.length], text: key },
      };
    default:
      return {
        key,
        kind: 'send-message',
        path: '/api/v1/send-message',
        body: { phone, message: key, channel: 'alt-a' },
      };
  }
}

export interface KeyedLoadOptions {
  /** Requests under way at once, each worker sending its next once the last is final. */
  workers: number;
  giveUpAfterMs: number;
}

/** Workers sending keyed requests one after the other until stopped; every key's outcome is kept. */
export class KeyedLoad {
  readonly outcomes: KeyOutcome[] = [];
  readonly runId = randomBytes(4).toString('hex');
  private next = 0;
  private stopping = false;
  private running: Promise<void> | undefined;

  constructor(
    private readonly gatewayUrl: string,
    private readonly workspace: LoadWorkspace,
    private readonly options: KeyedLoadOptions,
  ) {}

  start(): void {
    this.running = Promise.all(
      Array.from({ length: this.options.workers }, async () => {
        while (!this.stopping) {
          const request = nthRequest(this.runId, this.next++, this.workspace);
          this.outcomes.push(
            await callUntilFinal(this.gatewayUrl, this.workspace.apiKey, request, this.options),
          );
        }
      }),
    ).then(() => undefined);
  }

  /** Keys final so far (answered for good), to wait for progress. */
  finalCount(): number {
    return this.outcomes.filter((o) => o.finalAt !== undefined).length;
  }

  /** Stops starting keys and waits for those under way to be final (or given up). */
  async stop(): Promise<void> {
    this.stopping = true;
    await this.running;
  }
}
