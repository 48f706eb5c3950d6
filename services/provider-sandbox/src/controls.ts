import { Router } from 'express';
import { z } from 'zod';
import { type ChannelEmulator, DELIVERY_STATUSES, type SandboxStores } from './channel-emulator.js';
import { ControlError } from './control-error.js';
import { DEFAULT_FAULT_STATUS, FaultMode } from './faults.js';
import { parseControl } from './parse-control.js';
import { toDigits } from './phone-digits.js';
import { deliverWebhook } from './webhook-transport.js';

export interface ControlsOptions {
  stores: SandboxStores;
  channels: ReadonlyMap<string, ChannelEmulator>;
  fetchImpl: typeof fetch;
  reset: () => void;
}

/**
 * The `/_sandbox` API that tests and demos use to inspect and steer the emulated providers. The calls
 * here apply to every channel; a channel's own controls (templates) come with its emulator.
 */
export function createControls({ stores, channels, fetchImpl, reset }: ControlsOptions): Router {
  const channelName = z.string({ error: 'channel is required' }).refine((name) => channels.has(name), {
    error: `channel must be one of ${[...channels.keys()].join(', ')}`,
  });
  const account = z.string({ error: 'account must be a string' }).min(1, 'account must not be empty');
  const digits = (field: string) =>
    z
      .string({ error: `${field} must be a string` })
      .transform(toDigits)
      .pipe(z.string().min(1, `${field} must contain digits`));
  const appSecret = z
    .string({ error: 'app_secret must be a string' })
    .min(1, 'app_secret must not be empty')
    .optional();

  const sentQuery = z.object({
    to: z.string({ error: 'to must be given once' }).optional(),
    channel: z.string({ error: 'channel must be given once' }).optional(),
  });

  const faultBody = z.object(
    {
      channel: channelName,
      account: account.optional(),
      mode: z.enum(Object.values(FaultMode), { error: 'mode must be one of error, timeout, off' }),
      status: z.int({ error: 'status must be an integer' }).min(400).max(599).optional(),
    },
    { error: 'body must be a JSON object' },
  );

  const inboundBody = z.object(
    {
      channel: channelName,
      account,
      from: digits('from'),
      name: z.string({ error: 'name must be a string' }).optional(),
      text: z.string({ error: 'text must be a string' }).min(1, 'text must not be empty'),
      type: z.string({ error: 'type must be a string' }).default('text'),
      app_secret: appSecret,
    },
    { error: 'body must be a JSON object' },
  );

  const statusBody = z.object(
    {
      channel: channelName,
      account,
      message_id: z.string({ error: 'message_id must be a string' }).min(1, 'message_id must not be empty'),
      status: z.enum(DELIVERY_STATUSES, { error: `status must be one of ${DELIVERY_STATUSES.join(', ')}` }),
      app_secret: appSecret,
    },
    { error: 'body must be a JSON object' },
  );

  const windowBody = z.object(
    {
      channel: channelName,
      account,
      number: digits('number'),
      last_inbound_at: z.iso.datetime({ offset: true, error: 'last_inbound_at must be an ISO date-time' }),
    },
    { error: 'body must be a JSON object' },
  );

  const router = Router();

  router.get('/sent', (req, res) => {
    res.json(stores.sent.list(parseControl(sentQuery, req.query)));
  });

  router.post('/faults', (req, res) => {
    const { channel, account, mode, status } = parseControl(faultBody, req.body);
    if (mode === FaultMode.off) stores.faults.off(channel, account);
    else if (mode === FaultMode.timeout) stores.faults.set(channel, account, { mode });
    else stores.faults.set(channel, account, { mode, status: status ?? DEFAULT_FAULT_STATUS });
    res.json({ ok: true });
  });

  router.post('/inbound', async (req, res) => {
    const { channel, app_secret, ...message } = parseControl(inboundBody, req.body);
    const emulator = channels.get(channel)!;
    const delivery = emulator.inboundDelivery({ ...message, appSecret: app_secret });
    if (!delivery) throw noWebhook(channel, message.account);
    // The number has written to the account whether or not the connector takes the webhook.
    stores.windows.open(channel, message.account, message.from);
    const deliveredStatus = await deliverWebhook(fetchImpl, delivery);
    res.json({
      ok: true,
      delivered_status: deliveredStatus,
      provider_message_id: delivery.providerMessageId,
    });
  });

  router.post('/status', async (req, res) => {
    const { channel, account, message_id, status, app_secret } = parseControl(statusBody, req.body);
    const emulator = channels.get(channel)!;
    if (!emulator.statusDelivery) {
      throw new ControlError(400, `status updates are not supported for this channel (${channel})`);
    }
    const delivery = emulator.statusDelivery({
      account,
      messageId: message_id,
      status,
      appSecret: app_secret,
    });
    if (!delivery) throw noWebhook(channel, account);
    res.json({ ok: true, delivered_status: await deliverWebhook(fetchImpl, delivery) });
  });

  router.post('/windows', (req, res) => {
    const { channel, account, number, last_inbound_at } = parseControl(windowBody, req.body);
    stores.windows.open(channel, account, number, new Date(last_inbound_at));
    res.json({ ok: true });
  });

  router.post('/reset', (_req, res) => {
    reset();
    res.json({ ok: true });
  });

  return router;
}

function noWebhook(channel: string, account: string): ControlError {
  return new ControlError(409, `no webhook registered for ${channel} account ${account}`);
}
