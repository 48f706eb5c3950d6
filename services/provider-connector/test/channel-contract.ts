import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { InProcessBus } from '@inbox/bus';
import type { IntegrationChannel } from '@inbox/contracts';
import { OutboxRelay, type Pool } from '@inbox/db';
import { AddressPolicy, OutboundGuard } from '@inbox/outbound-http';
import { createSandbox } from '@inbox/provider-sandbox';
import { createHttpApp, createLogger, finishHttpApp, SecretBox } from '@inbox/service-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inboundRoutes } from '../src/handlers/inbound.js';
import { createIntegration } from '../src/handlers/integrations.js';
import { KeptCallbacks } from '../src/handlers/kept-callbacks.js';
import { sendText } from '../src/handlers/send-text.js';
import { IntegrationStore } from '../src/store/integrations.js';
import { replyContexts } from '../src/store/reply-contexts.js';
import { migratedPool } from './support.js';

type Json = Record<string, unknown>;

/** What the suite needs to know of one channel; the rest it learns from the sandbox as a provider would tell it. */
export interface ChannelUnderTest {
  channel: IntegrationChannel;
  /** The provider value webhooks show for it. */
  provider: string;
  /** The integration's config (without `base_url`, which points at the channel's emulator). */
  config: Json;
  /** The provider-side account the sandbox controls name (as the descriptor's `accountId` gives it). */
  account: string;
  /** The sender in the sandbox's `/inbound` control (digits: a phone, or a provider's user id). */
  customer: string;
  /** How the inbound event names that sender. */
  sender: { from: string | null; from_user_id?: string };
  /** Extra fields of the `/inbound` and `/status` controls (a signing provider's app secret). */
  controlExtras?: Json;
  /** The send command's recipient: a phone (`to`) or a provider's user id (`to_user_id`). */
  recipient: { to: string | null; to_user_id?: string };
  /**
   * A callback as the provider registered it, with its credential (signature, secret) made wrong; a
   * provider whose callbacks carry none (Mercado Livre's) forges the body instead, naming another
   * application or account.
   */
  forge(registered: { url: URL; headers: Record<string, string> }): {
    url: URL;
    headers: Record<string, string>;
    body?: string;
  };
  /**
   * What the provider needs before an integration exists and what it gives for it (Mercado Livre: the
   * application, and the seller's consent, whose token pair goes into the config).
   */
  prepare?(control: Control): Promise<Json>;
  /**
   * The emulator lists what was registered (`/_sandbox/webhooks`). Meta's is not listed: its callback URL
   * is the app's, subscribed per WABA, and the suite then posts to the integration's inbound path.
   */
  listsWebhooks: boolean;
  /** The provider reports delivery statuses by webhook. */
  statuses: boolean;
  /** The provider documents a rate-limit answer that the adapter reads as such (a `rate_limited` refusal). */
  rateLimitRefusal: boolean;
  /**
   * What the operator does by hand at the provider once the integration exists, in its console rather
   * than by API (Meta's app-level callback URL in the App Dashboard, Mercado Livre's notification URL in
   * its developer console), done through the sandbox's controls.
   */
  operatorSetup?(steps: { control: Control; callbackUrl: string }): Promise<void>;
}

export type Control = (path: string, body: Json) => Promise<{ status: number; body: Json }>;

/**
 * The behaviour every channel adapter must show against its sandbox emulator, the way `bus-contract.ts`
 * proves the transports: registration, inbound taken in once however often it is redelivered, a callback
 * without the provider's credential refused, a send the provider records in its own format, statuses
 * where the channel has them, and provider failures answered as the API's 502 naming the channel.
 */
export function channelContract(subject: ChannelUnderTest): void {
  describe(`channel contract: ${subject.channel}`, () => {
    const logger = createLogger('provider-connector', { level: 'silent' });
    const servers: Server[] = [];
    let pool: Pool;
    let guard: OutboundGuard;
    let store: IntegrationStore;
    let kept: KeptCallbacks;
    let connectorUrl = '';
    let sandboxUrl = '';
    let workspaceId = '';
    let integrationId = '';
    let sentProviderId = '';

    async function listen(app: { listen: (port: number, host: string) => Server }): Promise<string> {
      const server = app.listen(0, '127.0.0.1');
      await new Promise((resolve) => server.once('listening', resolve));
      servers.push(server);
      return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    }

    const control: Control = async (path, body) => {
      const res = await fetch(`${sandboxUrl}/_sandbox${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      return { status: res.status, body: (await res.json()) as Json };
    };
    const outbox = async (type: string): Promise<Json[]> => {
      // Callbacks a channel keeps (Z-API's) are recorded by the workers: all of them, before it is read.
      await kept.drain();
      const { rows } = await pool.query<{ data: Json }>(
        'select data from outbox where workspace_id = $1 and type = $2 order by seq',
        [workspaceId, type],
      );
      return rows.map((row) => row.data);
    };
    const send = (text = 'olá') =>
      sendText(
        {
          store,
          guard,
          logger,
          providerTimeoutMs: 5_000,
          replyContexts: (id: string) => replyContexts(pool, id),
        },
        {
          workspace_id: workspaceId,
          integration_id: integrationId,
          message_id: randomUUID(),
          ...subject.recipient,
          text,
        },
      );
    const fault = async (body: Json) => {
      const set = await control('/faults', { channel: subject.channel, account: subject.account, ...body });
      expect(set).toEqual({ status: 200, body: { ok: true } });
    };

    beforeAll(async () => {
      pool = await migratedPool();
      store = new IntegrationStore(pool, new SecretBox(SecretBox.generateKey()));
      const relay = new OutboxRelay({ pool, bus: new InProcessBus(), schema: 'connector' });
      const app = createHttpApp({ logger, parseJson: false });
      guard = new OutboundGuard(AddressPolicy.fromSetting('127.0.0.0/8'), { timeoutMs: 5_000 });
      const fetching = { guard, providerTimeoutMs: 5_000 };
      kept = new KeptCallbacks({ pool, store, relay, logger, fetching });
      app.use(inboundRoutes({ pool, store, relay, logger, fetching, kept }));
      finishHttpApp(app, logger);
      connectorUrl = await listen(app);
      // The connector here serves plain http; real providers would want https.
      sandboxUrl = await listen(createSandbox({ httpCallbacks: 'allow' }).app);
      const granted = (await subject.prepare?.(control)) ?? {};
      workspaceId = randomUUID();
      const created = await createIntegration(
        { store, guard, logger, publicConnectorUrl: connectorUrl, providerTimeoutMs: 5_000 },
        {
          workspace_id: workspaceId,
          channel: subject.channel,
          config: { base_url: `${sandboxUrl}/${subject.channel}`, ...subject.config, ...granted },
        },
      );
      integrationId = created.id;
      await subject.operatorSetup?.({
        control,
        callbackUrl: `${connectorUrl}/inbound/${subject.channel}/${integrationId}`,
      });
    });

    afterAll(async () => {
      for (const server of servers) {
        server.closeAllConnections();
        server.close();
      }
      await kept?.stop();
      await guard?.close();
      await pool?.end();
    });

    const registrations = async () => {
      const res = await fetch(
        `${sandboxUrl}/_sandbox/webhooks?channel=${subject.channel}&account=${subject.account}`,
      );
      return (await res.json()) as Array<{ url: string; headers: Record<string, string> }>;
    };

    it.runIf(subject.listsWebhooks)('registers its callback URL with the provider', async () => {
      const registered = await registrations();
      expect(registered.length).toBeGreaterThan(0);
      for (const webhook of registered) {
        expect(webhook.url.startsWith(`${connectorUrl}/inbound/${subject.channel}/${integrationId}`)).toBe(
          true,
        );
      }
    });

    it('takes an inbound message in once, however often the provider redelivers it', async () => {
      const delivered = await control('/inbound', {
        channel: subject.channel,
        account: subject.account,
        from: subject.customer,
        name: 'Maria Souza',
        text: 'oi',
        repeat: 3,
        ...subject.controlExtras,
      });
      expect(delivered.body).toMatchObject({ ok: true, delivered_statuses: [200, 200, 200] });
      const received = await outbox('inbound.message');
      expect(received).toEqual([
        expect.objectContaining({
          ...subject.sender,
          text: 'oi',
          provider_message_id: delivered.body.provider_message_id,
          integration: { id: integrationId, channel: subject.channel, provider: subject.provider },
        }),
      ]);
    });

    it('refuses a callback whose credential is not the one registered', async () => {
      const [registered] = subject.listsWebhooks
        ? await registrations()
        : [{ url: `${connectorUrl}/inbound/${subject.channel}/${integrationId}`, headers: {} }];
      const forged = subject.forge({ url: new URL(registered!.url), headers: registered!.headers });
      const before = (await outbox('inbound.message')).length;
      const answer = await fetch(forged.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...forged.headers },
        body: forged.body ?? JSON.stringify({ forged: true }),
      });
      expect(answer.status).toBe(401);
      expect((await outbox('inbound.message')).length).toBe(before);
    });

    it('sends a text the provider records, and answers its id', async () => {
      const sent = await send('olá, tudo bem?');
      sentProviderId = sent.provider_message_id;
      const log = (await (
        await fetch(`${sandboxUrl}/_sandbox/sent?channel=${subject.channel}`)
      ).json()) as Json[];
      expect(log.at(-1)).toMatchObject({ account: subject.account, provider_message_id: sentProviderId });
    });

    it.runIf(subject.statuses)("reads the provider's delivery status of a message it sent", async () => {
      const delivered = await control('/status', {
        channel: subject.channel,
        account: subject.account,
        message_id: sentProviderId,
        status: 'delivered',
        ...subject.controlExtras,
      });
      expect(delivered.body).toMatchObject({ ok: true, delivered_status: 200 });
      expect(await outbox('inbound.status')).toEqual([
        expect.objectContaining({ provider_message_id: sentProviderId, status: 'delivered' }),
      ]);
    });

    it("answers a provider's error as the API's 502 naming the channel", async () => {
      await fault({ mode: 'error', status: 500 });
      try {
        await expect(send()).rejects.toMatchObject({
          status: 502,
          body: { error: expect.stringContaining(`"${subject.channel}"`) },
        });
      } finally {
        await fault({ mode: 'off' });
      }
    });

    it.runIf(subject.rateLimitRefusal)(
      "answers the provider's rate limit as a 502 that says to wait",
      async () => {
        await fault({ mode: 'rate_limit' });
        try {
          await expect(send()).rejects.toMatchObject({
            status: 502,
            body: { error: expect.stringMatching(new RegExp(`"${subject.channel}" limitou os envios`)) },
          });
        } finally {
          await fault({ mode: 'off' });
        }
      },
    );
  });
}
