import type { Request, Response } from 'express';
import { z } from 'zod';
import type { CallbackOverride, ChatOfficialState } from './chat-official-state.js';
import { GraphCode, GraphError, invalidParameter } from './graph-error.js';
import { requireHandshake } from './meta-handshake.js';

/** Meta's limit for an alternate callback URL ("Maximum 200 characters"). */
export const MAX_CALLBACK_URL_CHARS = 200;

export interface CallbackRules {
  /** Meta calls only HTTPS endpoints; a local stack whose receiver serves plain HTTP relaxes this. */
  allowHttp: boolean;
}

const verifyToken = z.string({ error: 'verify_token is required' }).min(1, 'verify_token must not be empty');

const phoneOverrideBody = z.object(
  {
    webhook_configuration: z.union(
      [
        // An empty URI deletes the phone number's alternate callback.
        z.object({ override_callback_uri: z.literal('') }),
        z.object({ override_callback_uri: z.string(), verify_token: verifyToken }),
      ],
      { error: 'webhook_configuration needs override_callback_uri and verify_token' },
    ),
  },
  { error: 'body must be a JSON object' },
);

// Subscribing without a body is the plain subscription, and removes the WABA's alternate callback.
const wabaOverrideBody = z.object(
  {
    override_callback_uri: z.string({ error: 'override_callback_uri must be a string' }).optional(),
    verify_token: verifyToken.optional(),
  },
  { error: 'body must be a JSON object' },
);

/**
 * `POST /:version/:wabaId/subscribed_apps`: subscribes the app to the WABA's webhooks, with or without
 * the WABA's own alternate callback (`override_callback_uri` + `verify_token`, verified by handshake).
 */
export function subscribeApp(state: ChatOfficialState, rules: CallbackRules, fetchImpl: typeof fetch) {
  return async (req: Request<{ wabaId: string }>, res: Response): Promise<void> => {
    const parsed = wabaOverrideBody.safeParse(req.body ?? {});
    if (!parsed.success) throw invalidParameter(problems(parsed.error));
    const { override_callback_uri: url, verify_token: token } = parsed.data;
    let override: CallbackOverride | undefined;
    if (url !== undefined) {
      if (token === undefined) throw invalidParameter('verify_token is required with override_callback_uri');
      checkCallbackUrl(url, rules);
      override = { url, verifyToken: token };
      await requireHandshake(fetchImpl, override.url, override.verifyToken);
    }
    state.subscriptions.set(req.params.wabaId, override ? { override } : {});
    res.json({ success: true });
  };
}

/** `GET /:version/:wabaId/subscribed_apps`: the sandbox's one app, when it is subscribed. */
export function listSubscribedApps(state: ChatOfficialState) {
  return (req: Request<{ wabaId: string }>, res: Response): void => {
    const subscription = state.subscriptions.get(req.params.wabaId);
    res.json({
      data: subscription
        ? [
            {
              whatsapp_business_api_data: {
                id: SANDBOX_APP.id,
                link: SANDBOX_APP.link,
                name: SANDBOX_APP.name,
              },
              ...(subscription.override ? { override_callback_uri: subscription.override.url } : {}),
            },
          ]
        : [],
    });
  };
}

/** `DELETE /:version/:wabaId/subscribed_apps`: no webhooks for that WABA any more. */
export function unsubscribeApp(state: ChatOfficialState) {
  return (req: Request<{ wabaId: string }>, res: Response): void => {
    state.subscriptions.delete(req.params.wabaId);
    res.json({ success: true });
  };
}

/**
 * `POST /:version/:phoneNumberId` with `webhook_configuration`: the phone number's alternate callback.
 * Meta refuses it unless the app is subscribed to the number's WABA, and keeps only a callback that passed
 * its verification handshake, so a connector that cannot answer `hub.challenge` is never registered.
 */
export function overridePhoneCallback(
  state: ChatOfficialState,
  rules: CallbackRules,
  fetchImpl: typeof fetch,
) {
  return async (req: Request<{ phoneNumberId: string }>, res: Response): Promise<void> => {
    const parsed = phoneOverrideBody.safeParse(req.body);
    if (!parsed.success) throw invalidParameter(problems(parsed.error));
    const account = req.params.phoneNumberId;
    const configuration = parsed.data.webhook_configuration;
    if (!('verify_token' in configuration)) {
      state.overrides.delete(account);
      res.json({ success: true });
      return;
    }
    const wabaId = state.templates.wabaIdOf(account);
    if (!state.subscriptions.has(wabaId)) {
      throw new GraphError(
        400,
        GraphCode.invalidParameter,
        'Before override the current callback uri, your app must be subscribed to receive messages for WhatsApp Business Account',
        `the app is not subscribed to WABA ${wabaId}: POST /${wabaId}/subscribed_apps first`,
      );
    }
    checkCallbackUrl(configuration.override_callback_uri, rules);
    const override = { url: configuration.override_callback_uri, verifyToken: configuration.verify_token };
    await requireHandshake(fetchImpl, override.url, override.verifyToken);
    state.overrides.set(account, override);
    res.json({ success: true });
  };
}

/**
 * Where Meta posts a phone number's notifications: its own alternate callback, else its WABA's; nowhere
 * when the app is not subscribed to the WABA (the app's own callback URL is not emulated).
 */
export function callbackOf(state: ChatOfficialState, account: string): string | undefined {
  const subscription = state.subscriptions.get(state.templates.wabaIdOf(account));
  if (!subscription) return undefined;
  return (state.overrides.get(account) ?? subscription.override)?.url;
}

/** The one app the sandbox pretends to be, as `subscribed_apps` lists it. */
const SANDBOX_APP = {
  id: '670843887433847',
  link: 'https://www.facebook.com/games/?app_id=670843887433847',
  name: 'Inbox sandbox app',
};

function checkCallbackUrl(url: string, rules: CallbackRules): void {
  const parsed = URL.canParse(url) ? new URL(url) : undefined;
  const schemeAllowed = parsed?.protocol === 'https:' || (rules.allowHttp && parsed?.protocol === 'http:');
  if (!schemeAllowed || url.length > MAX_CALLBACK_URL_CHARS) {
    throw invalidParameter(
      `override_callback_uri must be an ${rules.allowHttp ? 'http(s)' : 'https'} URL of at most ${MAX_CALLBACK_URL_CHARS} characters`,
    );
  }
}

function problems(error: z.ZodError): string {
  return error.issues.map((issue) => issue.message).join('; ');
}
