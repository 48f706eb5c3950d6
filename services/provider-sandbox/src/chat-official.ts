import { setTimeout as pause } from 'node:timers/promises';
import { type NextFunction, type Request, type Response, Router } from 'express';
import type {
  ChannelEmulator,
  InboundDelivery,
  InboundMessage,
  SandboxStores,
  StatusUpdate,
  WebhookDelivery,
} from './channel-emulator.js';
import {
  callbackOf,
  listSubscribedApps,
  overridePhoneCallback,
  subscribeApp,
  unsubscribeApp,
} from './chat-official-callbacks.js';
import { chatOfficialControls, notIssued } from './chat-official-controls.js';
import { BusinessScopedIds, cloudKinds } from './chat-official-inbound.js';
import { type AfterAccept, sendMessage } from './chat-official-send.js';
import { CHAT_OFFICIAL, type ChatOfficialState, newWamid } from './chat-official-state.js';
import { listTemplates, TemplateRegistry } from './chat-official-templates.js';
import {
  inboundChange,
  type Notifier,
  notification,
  STATUS_ERROR_CODES,
  type StatusErrorCode,
  statusChange,
} from './chat-official-webhooks.js';
import { ControlError } from './control-error.js';
import {
  answerGraphError,
  appSecretProofRequired,
  endedToken,
  GraphCode,
  GraphError,
  invalidToken,
  requireAppSecretProof,
} from './graph-error.js';
import { IssuedMessages } from './issued-messages.js';
import { jsonBody } from './json-body.js';
import { metaRedelivery, WHATSAPP_RETRY_WINDOW_MS } from './meta-redelivery.js';
import { OwnAccordPosts } from './own-accord-posts.js';
import { deliverWebhook } from './webhook-transport.js';

/**
 * Templates and subscriptions are by business account, which has no token of its own in the sandbox; its
 * token is kept apart from the phone numbers' so that neither binds the other.
 */
const WABA_CREDENTIALS = `${CHAT_OFFICIAL}/waba`;

/**
 * How long after answering a send the sandbox posts the `failed` status of a message Meta accepted but
 * could not deliver. Meta's come later still; this keeps the order a client sees: the answer first.
 */
const LATE_FAILURE_PAUSE_MS = 250;

/** Emulates Meta's WhatsApp Cloud API (Graph API), the provider behind the `chat-official` channel. */
export function createChatOfficial(stores: SandboxStores, fetchImpl: typeof fetch): ChannelEmulator {
  const state: ChatOfficialState = {
    templates: new TemplateRegistry(),
    subscriptions: new Map(),
    overrides: new Map(),
    issued: new IssuedMessages(stores.sent.limit),
    appSecrets: new Map(),
    declaredAppSecrets: new Set(),
    proofRequired: new Set(),
    endedTokens: new Map(),
    throttles: new Map(),
    lastNotification: new Map(),
    userIds: new BusinessScopedIds(),
  };
  const rules = { allowHttp: stores.allowHttpCallbacks };
  /** Late notifications being worked out or posted. */
  const late = new OwnAccordPosts();

  const router = Router();
  router.use(jsonBody);
  router.param('version', (req, _res, next, version: string) => {
    if (!/^v\d+\.\d+$/.test(version)) throw unknownPath(req);
    next();
  });
  router.post(
    '/:version/:phoneNumberId/messages',
    requireToken(CHAT_OFFICIAL, 'phoneNumberId'),
    sendMessage({ stores, state, afterAccept: notifyLateFailure, fetchImpl }),
  );
  router.post(
    '/:version/:wabaId/subscribed_apps',
    requireToken(WABA_CREDENTIALS, 'wabaId'),
    subscribeApp(state, rules, fetchImpl),
  );
  router.get(
    '/:version/:wabaId/subscribed_apps',
    requireToken(WABA_CREDENTIALS, 'wabaId'),
    listSubscribedApps(state),
  );
  router.delete(
    '/:version/:wabaId/subscribed_apps',
    requireToken(WABA_CREDENTIALS, 'wabaId'),
    unsubscribeApp(state),
  );
  router.post(
    '/:version/:phoneNumberId',
    requireToken(CHAT_OFFICIAL, 'phoneNumberId'),
    overridePhoneCallback(state, rules, fetchImpl),
  );
  router.get(
    '/:version/:wabaId/message_templates',
    requireToken(WABA_CREDENTIALS, 'wabaId'),
    listTemplates(state.templates),
  );
  router.use((req) => {
    throw unknownPath(req);
  });
  router.use(answerGraphError);

  /**
   * Bearer token first, as Graph does: without a valid token nothing else about the call is looked at. A
   * token that stopped working (expired, its user logged out) answers so, whatever the account.
   */
  function requireToken(book: string, accountParam: 'phoneNumberId' | 'wabaId') {
    return (req: Request<Record<string, string>>, _res: Response, next: NextFunction): void => {
      const token = /^Bearer\s+(\S+)\s*$/i.exec(req.get('authorization') ?? '')?.[1];
      // Missing, or not the token this account was first called with.
      if (token === undefined) throw invalidToken();
      const ended = state.endedTokens.get(token);
      if (ended) throw endedToken(ended.ending, ended.at);
      if (!stores.credentials.accept(book, req.params[accountParam] ?? '', token)) throw invalidToken();
      checkAppSecretProof(req, token, accountParam);
      next();
    };
  }

  /**
   * `appsecret_proof`, in the query or the body: checked against the app's secret whenever the sandbox
   * knows it (Meta always does; the sandbox once `/chat-official/app-secret` declared it), and required
   * when the app has "Require App Secret" on.
   */
  function checkAppSecretProof(
    req: Request<Record<string, string>>,
    token: string,
    accountParam: 'phoneNumberId' | 'wabaId',
  ): void {
    const phoneNumberIds =
      accountParam === 'phoneNumberId'
        ? [req.params.phoneNumberId ?? '']
        : [...state.declaredAppSecrets].filter((id) => state.templates.wabaIdOf(id) === req.params.wabaId);
    const given =
      req.query.appsecret_proof ?? (req.body as { appsecret_proof?: unknown } | undefined)?.appsecret_proof;
    for (const id of phoneNumberIds) {
      const secret = state.declaredAppSecrets.has(id) ? state.appSecrets.get(id) : undefined;
      if (secret === undefined) continue;
      if (given === undefined) {
        if (state.proofRequired.has(id)) throw appSecretProofRequired();
        continue;
      }
      requireAppSecretProof(given, secret, token);
    }
  }

  /**
   * Where a phone number's notifications go, signed with the secret given (a control may forge with
   * another) or else the app's. The first secret a control gives for a number becomes the app's, which
   * signs what the sandbox posts of its own accord.
   */
  function notifier(account: string, appSecret?: string): Notifier | undefined {
    if (appSecret !== undefined && !state.appSecrets.has(account)) state.appSecrets.set(account, appSecret);
    const secret = appSecret ?? state.appSecrets.get(account);
    // Meta signs every notification with the app secret; the sandbox has to be told it.
    if (!secret) throw new ControlError(400, `app_secret is required for ${CHAT_OFFICIAL}`);
    const url = callbackOf(state, account);
    if (!url) return undefined;
    return { account, wabaId: state.templates.wabaIdOf(account), url, appSecret: secret };
  }

  function remember(account: string, delivery: WebhookDelivery): WebhookDelivery {
    state.lastNotification.set(account, delivery);
    return delivery;
  }

  async function post(account: string, delivery: WebhookDelivery): Promise<number> {
    return deliverWebhook(fetchImpl, remember(account, delivery));
  }

  /** Meta tells of a failure it finds after accepting a message by a `failed` status, never by the answer. */
  function notifyLateFailure(...[account, message, verdict]: Parameters<AfterAccept>): void {
    // Nowhere to post it, or no secret to sign it with: the sandbox does not even look.
    if (!state.appSecrets.has(account) || !callbackOf(state, account)) return;
    late.schedule(async (stillCurrent) => {
      const failure = await verdict();
      if (!failure) return;
      await pause(LATE_FAILURE_PAUSE_MS, undefined, { ref: false });
      if (!stillCurrent()) return;
      const to = notifier(account);
      if (!to) return;
      const change = statusChange(
        {
          wamid: message.wamid,
          status: 'failed',
          recipient: message.to,
          callbackData: message.callbackData,
          ...(message.userId ? { recipientUserId: message.userId } : {}),
          ...failure,
        },
        new Date(),
      );
      // Meta keeps retrying an undelivered notification; here it stays available to `redeliver`.
      await post(account, notification(to, [change]));
    });
  }

  function inboundDelivery(message: InboundMessage): InboundDelivery | undefined {
    const kind = cloudKinds.of(message.type);
    const to = notifier(message.account, message.appSecret);
    if (!to) return undefined;
    const wamid = newWamid();
    const userId = state.userIds.of(to.wabaId, message.from);
    const delivery = remember(
      message.account,
      notification(to, [inboundChange({ ...message, kind, wamid, userId }, new Date())]),
    );
    return { ...delivery, providerMessageId: wamid };
  }

  function statusDelivery(update: StatusUpdate): WebhookDelivery | undefined {
    const issued = state.issued.get(update.messageId);
    // Meta only reports on its own messages, and only to the phone number that sent them.
    if (!issued || issued.account !== update.account) throw notIssued(update.messageId, update.account);
    const errorCode = statusErrorCode(update.errorCode);
    const to = notifier(update.account, update.appSecret);
    if (!to) return undefined;
    const change = statusChange(
      {
        wamid: update.messageId,
        status: update.status,
        recipient: issued.to,
        callbackData: issued.callbackData,
        ...(issued.userId ? { recipientUserId: issued.userId } : {}),
        ...(errorCode ? { errorCode } : {}),
      },
      new Date(),
    );
    return remember(update.account, notification(to, [change]));
  }

  function reset(): void {
    late.reset();
    state.templates.clear();
    state.subscriptions.clear();
    state.overrides.clear();
    state.issued.clear();
    state.appSecrets.clear();
    state.declaredAppSecrets.clear();
    state.proofRequired.clear();
    state.endedTokens.clear();
    state.throttles.clear();
    state.lastNotification.clear();
    state.userIds.clear();
  }

  return {
    channel: CHAT_OFFICIAL,
    router,
    controlRouter: chatOfficialControls({ stores, state, notifier, post }),
    inboundDelivery,
    statusDelivery,
    redelivery: metaRedelivery(WHATSAPP_RETRY_WINDOW_MS),
    losesAnswers: true,
    reset,
    idle: () => late.idle(),
  };
}

function statusErrorCode(code: number | undefined): StatusErrorCode | undefined {
  if (code === undefined) return undefined;
  if (!(STATUS_ERROR_CODES as number[]).includes(code)) {
    throw new ControlError(400, `error_code must be one of ${STATUS_ERROR_CODES.join(', ')}`);
  }
  return code as StatusErrorCode;
}

function unknownPath(req: Request): GraphError {
  return new GraphError(
    400,
    GraphCode.unknownPath,
    `Unknown path components: ${req.path}`,
    'The sandbox emulates /{version}/{phone-number-id}/messages, /{version}/{phone-number-id}, ' +
      '/{version}/{waba-id}/subscribed_apps and /{version}/{waba-id}/message_templates, with a version such as v21.0',
  );
}
