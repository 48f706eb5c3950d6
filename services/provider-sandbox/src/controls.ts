import { Router } from 'express';
import { z } from 'zod';
import {
  ACCOUNT_STATES,
  type ChannelEmulator,
  DELIVERY_STATUSES,
  type SandboxStores,
  type WebhookDelivery,
} from './channel-emulator.js';
import { ControlError } from './control-error.js';
import { DEFAULT_FAULT_STATUS, FaultMode } from './faults.js';
import { parseControl } from './parse-control.js';
import { toDigits } from './phone-digits.js';
import type { Redeliveries } from './redelivery.js';
import { answerOfWebhook, type WebhookAnswer } from './webhook-transport.js';

export interface ControlsOptions {
  stores: SandboxStores;
  channels: ReadonlyMap<string, ChannelEmulator>;
  fetchImpl: typeof fetch;
  /** Where a provider that redelivers (`ChannelEmulator.redelivery`) carries on delivering, in the background. */
  redeliveries: Redeliveries;
  reset: () => void;
}

/**
 * The `/_sandbox` API that tests and demos use to inspect and steer the emulated providers. The calls
 * here apply to every channel; a channel's own controls (templates) come with its emulator.
 */
export function createControls({
  stores,
  channels,
  fetchImpl,
  redeliveries,
  reset,
}: ControlsOptions): Router {
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

  // A provider that got no answer (or a late one) delivers the same callback again: Evolution API up to
  // 10 attempts, Meta for up to 7 days.
  const repeat = z
    .int({ error: 'repeat must be an integer from 1 to 10' })
    .min(1, 'repeat must be an integer from 1 to 10')
    .max(10, 'repeat must be an integer from 1 to 10')
    .default(1);

  const sentQuery = z.object({
    to: z.string({ error: 'to must be given once' }).optional(),
    channel: z.string({ error: 'channel must be given once' }).optional(),
  });

  const webhooksQuery = z.object({
    channel: channelName.optional(),
    account: z.string({ error: 'account must be given once' }).optional(),
  });

  const withoutWhatsAppBody = z.object({ number: digits('number') });

  const accountBody = z.object(
    {
      channel: channelName,
      account,
      state: z.enum(ACCOUNT_STATES, { error: `state must be one of ${ACCOUNT_STATES.join(', ')}` }),
    },
    { error: 'body must be a JSON object' },
  );

  const faultBody = z.object(
    {
      channel: channelName,
      account: account.optional(),
      mode: z.enum(Object.values(FaultMode), {
        error: `mode must be one of ${Object.values(FaultMode).join(', ')}`,
      }),
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
      group_id: z
        .string({ error: 'group_id must be a string' })
        .regex(/^[\d-]+$/, 'group_id must be digits (and dashes)')
        .optional(),
      addressing_mode: z
        .enum(['pn', 'lid', 'lid-only'], { error: 'addressing_mode must be pn, lid or lid-only' })
        .optional(),
      topic: z.string({ error: 'topic must be a string' }).optional(),
      username: z
        .string({ error: 'username must be a string' })
        .min(1, 'username must not be empty')
        .optional(),
      repeat,
    },
    { error: 'body must be a JSON object' },
  );

  const statusBody = z.object(
    {
      channel: channelName,
      account,
      message_id: z.string({ error: 'message_id must be a string' }).min(1, 'message_id must not be empty'),
      status: z.enum(DELIVERY_STATUSES, { error: `status must be one of ${DELIVERY_STATUSES.join(', ')}` }),
      error_code: z.int({ error: 'error_code must be an integer' }).optional(),
      app_secret: appSecret,
      repeat,
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
    const sends = stores.sent.list(parseControl(sentQuery, req.query));
    // Whoever counts sends through the log (the fault run) must know when it no longer holds them all.
    res.setHeader('X-Sandbox-Sent-Dropped', String(stores.sent.dropped));
    res.json(sends);
  });

  // What the providers delivered again of their own accord (`redelivering` in a control's answer).
  router.get('/redeliveries', (req, res) => {
    const { channel, account } = parseControl(webhooksQuery, req.query);
    res.json(redeliveries.made(channel, account));
  });

  router.get('/webhooks', (req, res) => {
    const { channel, account } = parseControl(webhooksQuery, req.query);
    const emulators = channel ? [channels.get(channel)!] : [...channels.values()];
    res.json(emulators.flatMap((emulator) => emulator.webhooks?.(account) ?? []));
  });

  router.post('/accounts', (req, res) => {
    const { channel, account, state } = parseControl(accountBody, req.body);
    const emulator = channels.get(channel)!;
    if (!emulator.setAccountState) {
      throw new ControlError(400, `account states are not supported for this channel (${channel})`);
    }
    emulator.setAccountState(account, state);
    res.json({ ok: true });
  });

  router.post('/faults', (req, res) => {
    const { channel, account, mode, status } = parseControl(faultBody, req.body);
    if (mode === FaultMode.rateLimit && !channels.get(channel)!.rateLimited) {
      throw new ControlError(400, `${channel} documents no rate-limit answer to emulate`);
    }
    if (mode === FaultMode.lostAnswer && !channels.get(channel)!.losesAnswers) {
      throw new ControlError(400, `${channel} does not emulate the lost_answer fault`);
    }
    if (mode === FaultMode.off) stores.faults.off(channel, account);
    else if (mode === FaultMode.error)
      stores.faults.set(channel, account, { mode, status: status ?? DEFAULT_FAULT_STATUS });
    else stores.faults.set(channel, account, { mode });
    res.json({ ok: true });
  });

  router.post('/inbound', async (req, res) => {
    const { channel, app_secret, group_id, addressing_mode, repeat, ...message } = parseControl(
      inboundBody,
      req.body,
    );
    const emulator = channels.get(channel)!;
    const delivery = emulator.inboundDelivery({
      ...message,
      appSecret: app_secret,
      groupId: group_id,
      addressingMode: addressing_mode,
    });
    if (!delivery) throw noWebhook(channel, message.account);
    // The number has written to the account whether or not the connector takes the webhook.
    stores.windows.open(channel, message.account, message.from);
    res.json({
      ok: true,
      ...(await deliverRepeatedly(emulator, message.account, delivery, repeat)),
      provider_message_id: delivery.providerMessageId,
    });
  });

  router.post('/status', async (req, res) => {
    const { channel, account, message_id, status, error_code, app_secret, repeat } = parseControl(
      statusBody,
      req.body,
    );
    const emulator = channels.get(channel)!;
    if (!emulator.statusDelivery) {
      throw new ControlError(400, `status updates are not supported for this channel (${channel})`);
    }
    const delivery = emulator.statusDelivery({
      account,
      messageId: message_id,
      status,
      ...(error_code === undefined ? {} : { errorCode: error_code }),
      appSecret: app_secret,
    });
    if (!delivery) throw noWebhook(channel, account);
    res.json({ ok: true, ...(await deliverRepeatedly(emulator, account, delivery, repeat)) });
  });

  /**
   * The same bytes `times` times, one after another, as a provider redelivering would; then, where the
   * provider delivers again of its own accord and the last delivery was not taken, on in the background
   * at the provider's pace (`redelivering: true`).
   */
  async function deliverRepeatedly(
    emulator: ChannelEmulator,
    account: string,
    delivery: WebhookDelivery,
    times: number,
  ) {
    const policy = emulator.redelivery;
    const gaveUp = emulator.undelivered?.bind(emulator, account);
    // Behind an earlier delivery of its queue the provider is still making: it goes out after that one.
    if (policy && redeliveries.hold(emulator.channel, account, delivery, policy, gaveUp))
      return { held: true };
    const firstAt = Date.now();
    const answers: (WebhookAnswer | undefined)[] = [];
    const followUp = () =>
      policy !== undefined &&
      redeliveries.followUp(emulator.channel, account, delivery, policy, { answers, firstAt }, gaveUp);
    try {
      for (let attempt = 0; attempt < times; attempt++)
        answers.push(await answerOfWebhook(fetchImpl, delivery));
    } catch (unreachable) {
      answers.push(undefined);
      followUp();
      throw unreachable;
    }
    const statuses = answers.map((answer) => answer!.status);
    const again = followUp();
    return {
      delivered_status: statuses[0]!,
      ...(times > 1 ? { delivered_statuses: statuses } : {}),
      ...(again ? { redelivering: true } : {}),
    };
  }

  // WhatsApp's own knowledge, shared by every provider that speaks to it.
  router.post('/without-whatsapp', (req, res) => {
    const { number } = parseControl(withoutWhatsAppBody, req.body);
    stores.withoutWhatsApp.add(number);
    res.json({ ok: true });
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
