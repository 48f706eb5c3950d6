import { Router } from 'express';
import { z } from 'zod';
import type { SandboxStores, WebhookDelivery } from './channel-emulator.js';
import { ControlError } from './control-error.js';
import { requireHandshake } from './meta-handshake.js';
import type { BatchEvent, MetaMessagingState } from './meta-messaging.js';
import { parseControl } from './parse-control.js';
import { deliverWebhook } from './webhook-transport.js';

export interface MetaAppControlDeps {
  stores: SandboxStores;
  state: MetaMessagingState;
  fetchImpl: typeof fetch;
  batchDelivery(
    account: string,
    events: BatchEvent[],
    appSecret?: string,
  ): { delivery: WebhookDelivery; mids: string[] } | undefined;
}

const account = z.string({ error: 'account must be a string' }).min(1, 'account must not be empty');
const userId = (field: string) =>
  z
    .string({ error: `${field} must be a string` })
    .regex(/^\d+$/, `${field} must be a scoped user id (digits)`);

const appBody = z
  .object(
    {
      account,
      callback_url: z.url({ error: 'callback_url must be a URL' }).optional(),
      verify_token: z
        .string({ error: 'verify_token must be a string' })
        .min(1, 'verify_token must not be empty')
        .optional(),
      app_secret: z.string({ error: 'app_secret must be a string' }).min(1, 'app_secret must not be empty'),
    },
    { error: 'body must be a JSON object' },
  )
  .refine((body) => (body.callback_url === undefined) === (body.verify_token === undefined), {
    error: 'give callback_url and verify_token together',
  });

const KINDS = ['message', 'echo', 'standby', 'reaction', 'delivery', 'read'] as const;
const batchBody = z.object(
  {
    account,
    app_secret: z.string({ error: 'app_secret must be a string' }).min(1).optional(),
    events: z
      .array(
        z.object({
          kind: z.enum(KINDS, { error: `kind must be one of ${KINDS.join(', ')}` }),
          from: userId('from'),
          text: z.string({ error: 'text must be a string' }).min(1).optional(),
          mid: z.string({ error: 'mid must be a string' }).min(1).optional(),
          account: account.optional(),
        }),
        { error: 'events must be an array' },
      )
      .min(1, 'events must not be empty')
      .max(50, 'events must have at most 50 items'),
  },
  { error: 'body must be a JSON object' },
);

/**
 * The steps an operator takes in Meta's App Dashboard, and deliveries only a batch can show:
 * `POST /_sandbox/<channel>/app` says which app (by its secret) an account is subscribed to and, with
 * `callback_url` and `verify_token`, sets that app's one callback URL (verified by the hub.challenge
 * handshake, as the dashboard's "Verify and save" does), where every account of the app's events go; `POST /_sandbox/<channel>/batch`
 * posts several events, one entry each, in one signed POST (echoes, standby, reactions and other
 * accounts' events among them, as Meta mixes them).
 */
export function metaAppControls({ stores, state, fetchImpl, batchDelivery }: MetaAppControlDeps): Router {
  const { channel } = state.product;
  const router = Router();

  router.post(`/${channel}/app`, async (req, res) => {
    const body = parseControl(appBody, req.body);
    if (body.callback_url !== undefined && body.verify_token !== undefined) {
      const url = new URL(body.callback_url);
      if (url.protocol !== 'https:' && !(stores.allowHttpCallbacks && url.protocol === 'http:'))
        throw new ControlError(400, 'callback_url must be https: Meta calls only HTTPS endpoints');
      await requireHandshake(fetchImpl, body.callback_url, body.verify_token);
      // The app has one callback URL: setting it again moves every one of its accounts' events there.
      state.apps.set(body.app_secret, { url: body.callback_url, verifyToken: body.verify_token });
    } else if (!state.apps.has(body.app_secret)) {
      throw new ControlError(409, 'the app has no callback URL yet: give callback_url and verify_token');
    }
    state.appOfAccount.set(body.account, body.app_secret);
    res.json({ ok: true });
  });

  router.post(`/${channel}/batch`, async (req, res) => {
    const body = parseControl(batchBody, req.body);
    const batch = batchDelivery(body.account, body.events, body.app_secret);
    if (!batch) throw new ControlError(409, `no webhook registered for ${channel} account ${body.account}`);
    const status = await deliverWebhook(fetchImpl, batch.delivery);
    res.json({ ok: true, delivered_status: status, provider_message_ids: batch.mids });
  });

  return router;
}
