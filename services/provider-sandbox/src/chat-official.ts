import { type NextFunction, type Request, type Response, Router } from 'express';
import type {
  ChannelEmulator,
  InboundDelivery,
  InboundMessage,
  SandboxStores,
  StatusUpdate,
  WebhookDelivery,
} from './channel-emulator.js';
import { sendMessage } from './chat-official-send.js';
import { CHAT_OFFICIAL, type ChatOfficialState, newWamid } from './chat-official-state.js';
import { listTemplates, TemplateRegistry, templateControls } from './chat-official-templates.js';
import {
  inboundNotification,
  type Notifier,
  overrideCallback,
  statusNotification,
} from './chat-official-webhooks.js';
import { ControlError } from './control-error.js';
import { answerGraphError, GraphCode, GraphError, invalidToken } from './graph-error.js';
import { jsonBody } from './json-body.js';

/**
 * Templates are listed by business account, which has no token of its own in the sandbox; its token is
 * kept apart from the phone numbers' so that neither binds the other.
 */
const WABA_CREDENTIALS = `${CHAT_OFFICIAL}/waba`;

/** Emulates Meta's WhatsApp Cloud API (Graph API), the provider behind the `chat-official` channel. */
export function createChatOfficial(stores: SandboxStores, fetchImpl: typeof fetch): ChannelEmulator {
  const state: ChatOfficialState = {
    templates: new TemplateRegistry(),
    overrides: new Map(),
    issued: new Map(),
  };

  const router = Router();
  router.use(jsonBody);
  router.param('version', (req, _res, next, version: string) => {
    if (!/^v\d+\.\d+$/.test(version)) throw unknownPath(req);
    next();
  });
  router.post(
    '/:version/:phoneNumberId/messages',
    requireToken(CHAT_OFFICIAL, 'phoneNumberId'),
    sendMessage(stores, state),
  );
  router.post(
    '/:version/:phoneNumberId',
    requireToken(CHAT_OFFICIAL, 'phoneNumberId'),
    overrideCallback(state, fetchImpl),
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

  /** Bearer token first, as Graph does: without a valid token nothing else about the call is looked at. */
  function requireToken(book: string, accountParam: 'phoneNumberId' | 'wabaId') {
    return (req: Request<Record<string, string>>, _res: Response, next: NextFunction): void => {
      const token = /^Bearer\s+(\S+)\s*$/i.exec(req.get('authorization') ?? '')?.[1];
      if (token === undefined)
        throw invalidToken('An access token is required: Authorization: Bearer <token>');
      if (!stores.credentials.accept(book, req.params[accountParam] ?? '', token)) {
        throw invalidToken('The access token differs from the one this account was first called with');
      }
      next();
    };
  }

  function notifier(account: string, appSecret: string | undefined): Notifier | undefined {
    // Meta signs every notification with the app secret; the sandbox has to be told it.
    if (!appSecret) throw new ControlError(400, `app_secret is required for ${CHAT_OFFICIAL}`);
    const override = state.overrides.get(account);
    if (!override) return undefined;
    return { account, wabaId: state.templates.wabaIdOf(account), url: override.url, appSecret };
  }

  function inboundDelivery(message: InboundMessage): InboundDelivery | undefined {
    if (message.type !== 'text') {
      throw new ControlError(400, `${CHAT_OFFICIAL} inbound supports type "text" only`);
    }
    const to = notifier(message.account, message.appSecret);
    if (!to) return undefined;
    const wamid = newWamid();
    const delivery = inboundNotification(to, { ...message, wamid }, new Date());
    return { ...delivery, providerMessageId: wamid };
  }

  function statusDelivery(update: StatusUpdate): WebhookDelivery | undefined {
    const issued = state.issued.get(update.messageId);
    // Meta only reports on its own messages, and only to the phone number that sent them.
    if (!issued || issued.account !== update.account) {
      throw new ControlError(
        404,
        `message ${update.messageId} was not issued by ${CHAT_OFFICIAL} account ${update.account}`,
      );
    }
    const to = notifier(update.account, update.appSecret);
    if (!to) return undefined;
    return statusNotification(
      to,
      { wamid: update.messageId, status: update.status, recipient: issued.to },
      new Date(),
    );
  }

  function reset(): void {
    state.templates.clear();
    state.overrides.clear();
    state.issued.clear();
  }

  return {
    channel: CHAT_OFFICIAL,
    router,
    controlRouter: templateControls(state.templates),
    inboundDelivery,
    statusDelivery,
    reset,
  };
}

function unknownPath(req: Request): GraphError {
  return new GraphError(
    400,
    GraphCode.unknownPath,
    `Unknown path components: ${req.path}`,
    'The sandbox emulates /{version}/{phone-number-id}/messages, /{version}/{phone-number-id} and ' +
      '/{version}/{waba-id}/message_templates, with a version such as v21.0',
  );
}
