import { Router } from 'express';
import { z } from 'zod';
import { DELIVERY_STATUSES, type SandboxStores, type WebhookDelivery } from './channel-emulator.js';
import { cloudKinds } from './chat-official-inbound.js';
import { CHAT_OFFICIAL, type ChatOfficialState, newWamid } from './chat-official-state.js';
import { templateControls } from './chat-official-templates.js';
import {
  inboundChange,
  type Notifier,
  notification,
  STATUS_ERROR_CODES,
  statusChange,
} from './chat-official-webhooks.js';
import { ControlError } from './control-error.js';
import { THROTTLE_CODES, TOKEN_ENDINGS } from './graph-error.js';
import { parseControl } from './parse-control.js';
import { toDigits } from './phone-digits.js';

export interface ChatOfficialControlDeps {
  stores: SandboxStores;
  state: ChatOfficialState;
  /** Where the phone number's notifications go, signed with `appSecret` or the app's; undefined: nowhere. */
  notifier(account: string, appSecret?: string): Notifier | undefined;
  /** Posts a notification, remembers it for a redelivery, and answers the receiver's status. */
  post(account: string, delivery: WebhookDelivery): Promise<number>;
}

const account = z.string({ error: 'account must be a string' }).min(1, 'account must not be empty');
const appSecret = z.string({ error: 'app_secret must be a string' }).min(1, 'app_secret must not be empty');
const digits = (field: string) =>
  z
    .string({ error: `${field} must be a string` })
    .transform(toDigits)
    .pipe(z.string().min(1, `${field} must contain digits`));

const appSecretBody = z.object(
  {
    account,
    app_secret: appSecret,
    require_proof: z.boolean({ error: 'require_proof must be a boolean' }).default(false),
  },
  { error: 'body must be a JSON object' },
);

const tokenBody = z.object(
  {
    account,
    state: z.enum([...TOKEN_ENDINGS, 'valid'], {
      error: `state must be one of ${[...TOKEN_ENDINGS, 'valid'].join(', ')}`,
    }),
  },
  { error: 'body must be a JSON object' },
);

const throttleBody = z.object(
  {
    account,
    code: z.literal(THROTTLE_CODES, { error: `code must be one of ${THROTTLE_CODES.join(', ')}` }),
    to: digits('to').optional(),
    times: z.int({ error: 'times must be an integer' }).min(1, 'times must be at least 1').default(1),
  },
  { error: 'body must be a JSON object' },
);

const errorCode = z.literal(STATUS_ERROR_CODES, {
  error: `error_code must be one of ${STATUS_ERROR_CODES.join(', ')}`,
});

const notificationsBody = z
  .object(
    {
      account,
      app_secret: appSecret.optional(),
      messages: z
        .array(
          z.object({
            from: digits('from'),
            name: z.string({ error: 'name must be a string' }).optional(),
            text: z.string({ error: 'text must be a string' }).min(1, 'text must not be empty'),
            type: z
              .enum(cloudKinds.kinds, { error: `type must be one of ${cloudKinds.kinds.join(', ')}` })
              .default('text'),
            username: z.string({ error: 'username must be a string' }).min(1).optional(),
          }),
          { error: 'messages must be an array' },
        )
        .default([]),
      statuses: z
        .array(
          z.object({
            message_id: z.string({ error: 'message_id must be a string' }).min(1),
            status: z.enum(DELIVERY_STATUSES, {
              error: `status must be one of ${DELIVERY_STATUSES.join(', ')}`,
            }),
            error_code: errorCode.optional(),
          }),
          { error: 'statuses must be an array' },
        )
        .default([]),
    },
    { error: 'body must be a JSON object' },
  )
  .refine((body) => body.messages.length + body.statuses.length > 0, {
    error: 'give at least one of messages or statuses',
  });

const redeliverBody = z.object({ account }, { error: 'body must be a JSON object' });

/** The `/_sandbox` routes only the Cloud API emulation understands. */
export function chatOfficialControls(deps: ChatOfficialControlDeps): Router {
  const { stores, state } = deps;
  const router = Router();
  router.use(templateControls(state.templates));

  router.post('/chat-official/app-secret', (req, res) => {
    const body = parseControl(appSecretBody, req.body);
    state.appSecrets.set(body.account, body.app_secret);
    state.declaredAppSecrets.add(body.account);
    if (body.require_proof) state.proofRequired.add(body.account);
    else state.proofRequired.delete(body.account);
    res.json({ ok: true });
  });

  router.post('/chat-official/token', (req, res) => {
    const body = parseControl(tokenBody, req.body);
    const token = stores.credentials.get(CHAT_OFFICIAL, body.account);
    if (token === undefined) {
      throw new ControlError(
        409,
        `no access token was used for ${CHAT_OFFICIAL} account ${body.account} yet`,
      );
    }
    if (body.state === 'valid') state.endedTokens.delete(token);
    else state.endedTokens.set(token, { ending: body.state, at: new Date() });
    res.json({ ok: true });
  });

  router.post('/chat-official/throttle', (req, res) => {
    const { account: phone, code, to, times } = parseControl(throttleBody, req.body);
    const throttles = state.throttles.get(phone) ?? [];
    throttles.push({ code, ...(to === undefined ? {} : { to }), remaining: times });
    state.throttles.set(phone, throttles);
    res.json({ ok: true });
  });

  router.post('/chat-official/notifications', async (req, res) => {
    const body = parseControl(notificationsBody, req.body);
    const to = deps.notifier(body.account, body.app_secret);
    if (!to)
      throw new ControlError(409, `no webhook registered for ${CHAT_OFFICIAL} account ${body.account}`);
    const at = new Date();
    const messageIds = body.messages.map(() => newWamid());
    const values = [
      ...body.messages.map(({ type, ...message }, i) =>
        inboundChange(
          {
            ...message,
            kind: type,
            wamid: messageIds[i]!,
            userId: state.userIds.of(to.wabaId, message.from),
          },
          at,
        ),
      ),
      ...body.statuses.map((status) => {
        const issued = state.issued.get(status.message_id);
        if (!issued || issued.account !== body.account) throw notIssued(status.message_id, body.account);
        return statusChange(
          {
            wamid: status.message_id,
            status: status.status,
            recipient: issued.to,
            callbackData: issued.callbackData,
            ...(issued.userId ? { recipientUserId: issued.userId } : {}),
            ...(status.error_code === undefined ? {} : { errorCode: status.error_code }),
          },
          at,
        );
      }),
    ];
    // The customers wrote to the number whether or not the receiver takes the notification.
    for (const message of body.messages) stores.windows.open(CHAT_OFFICIAL, body.account, message.from, at);
    const deliveredStatus = await deps.post(body.account, notification(to, values));
    res.json({ ok: true, delivered_status: deliveredStatus, provider_message_ids: messageIds });
  });

  router.post('/chat-official/redeliver', async (req, res) => {
    const body = parseControl(redeliverBody, req.body);
    const last = state.lastNotification.get(body.account);
    if (!last)
      throw new ControlError(409, `no notification was posted for ${CHAT_OFFICIAL} account ${body.account}`);
    res.json({ ok: true, delivered_status: await deps.post(body.account, last) });
  });

  return router;
}

export function notIssued(messageId: string, phone: string): ControlError {
  return new ControlError(404, `message ${messageId} was not issued by ${CHAT_OFFICIAL} account ${phone}`);
}
