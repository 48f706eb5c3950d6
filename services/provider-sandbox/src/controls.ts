import { Router } from 'express';
import { type ZodType, z } from 'zod';
import type { ChannelEmulator, SandboxStores } from './channel-emulator.js';
import { ControlError } from './control-error.js';
import { DEFAULT_FAULT_STATUS, FaultMode } from './faults.js';
import { toDigits } from './phone-digits.js';

/** A connector that hangs must not hang the test that asked for the inbound. */
const DELIVERY_TIMEOUT_MS = 10_000;

export interface ControlsOptions {
  stores: SandboxStores;
  channels: ReadonlyMap<string, ChannelEmulator>;
  fetchImpl: typeof fetch;
  reset: () => void;
}

/** The `/_sandbox` API that tests and demos use to inspect and steer the emulated providers. */
export function createControls({ stores, channels, fetchImpl, reset }: ControlsOptions): Router {
  const channelName = z.string({ error: 'channel is required' }).refine((name) => channels.has(name), {
    error: `channel must be one of ${[...channels.keys()].join(', ')}`,
  });
  const account = z.string({ error: 'account must be a string' }).min(1, 'account must not be empty');

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
      from: z
        .string({ error: 'from must be a string' })
        .transform(toDigits)
        .pipe(z.string().min(1, 'from must contain digits')),
      name: z.string({ error: 'name must be a string' }).optional(),
      text: z.string({ error: 'text must be a string' }).min(1, 'text must not be empty'),
      type: z.string({ error: 'type must be a string' }).default('text'),
    },
    { error: 'body must be a JSON object' },
  );

  const router = Router();

  router.get('/sent', (req, res) => {
    res.json(stores.sent.list(parse(sentQuery, req.query)));
  });

  router.post('/faults', (req, res) => {
    const { channel, account, mode, status } = parse(faultBody, req.body);
    if (mode === FaultMode.off) stores.faults.off(channel, account);
    else if (mode === FaultMode.timeout) stores.faults.set(channel, account, { mode });
    else stores.faults.set(channel, account, { mode, status: status ?? DEFAULT_FAULT_STATUS });
    res.json({ ok: true });
  });

  router.post('/inbound', async (req, res) => {
    const { channel, ...message } = parse(inboundBody, req.body);
    const emulator = channels.get(channel)!;
    const delivery = emulator.inboundDelivery(message);
    if (!delivery)
      throw new ControlError(409, `no webhook registered for ${channel} account ${message.account}`);
    // The number has written to the account whether or not the connector takes the webhook.
    stores.windows.open(channel, message.account, message.from);
    let deliveredStatus: number;
    try {
      const response = await fetchImpl(delivery.url, {
        method: 'POST',
        headers: delivery.headers,
        body: delivery.body,
        signal: AbortSignal.timeout(DELIVERY_TIMEOUT_MS),
      });
      // Drained so the connection can be reused or closed.
      await response.arrayBuffer();
      deliveredStatus = response.status;
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      throw new ControlError(502, `webhook delivery to ${delivery.url} failed: ${reason}`, { cause: error });
    }
    res.json({ ok: true, delivered_status: deliveredStatus });
  });

  router.post('/reset', (_req, res) => {
    reset();
    res.json({ ok: true });
  });

  return router;
}

function parse<T>(schema: ZodType<T>, input: unknown): T {
  const parsed = schema.safeParse(input);
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues.map((issue) =>
    issue.path.length === 0 ? issue.message : `${issue.path.join('.')}: ${issue.message}`,
  );
  throw new ControlError(400, problems.join('; '));
}
