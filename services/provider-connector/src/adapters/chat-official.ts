import { setTimeout as pause } from 'node:timers/promises';
import { AppError, type ChannelConfig, platformTexts, type TemplateSend } from '@inbox/contracts';
import { z } from 'zod';
import { templateComponents } from '../domain/template-rules.js';
import {
  buttonValues,
  type ChannelAdapter,
  type InboundBatch,
  type InboundMessage,
  InboundRejected,
  maxCatalogueChars,
  maxCatalogueTemplates,
  type ProviderCall,
  ProviderError,
  type ProviderRefusal,
  type ProviderTemplate,
  providerWords,
  type StatusUpdate,
  templateChars,
} from './channel-adapter.js';
import { cloudMessageContent } from './chat-official-content.js';
import { callProvider, joinUrl } from './http.js';
import {
  appSecretProof,
  GraphErrorBody,
  hubChallengeAnswer,
  hubSignatureMatches,
  refusesAppSecret,
} from './meta-graph.js';

type ChatOfficialConfig = ChannelConfig<'chat-official'>;

/** The Graph codes the connector acts on, named as Meta's error-code reference names them. */
export const graphCodes = {
  invalidParameter: 100,
  accessTokenInvalid: 190,
  apiTooManyCalls: 4,
  rateLimitIssues: 80007,
  rateLimitHit: 130429,
  pairRateLimitHit: 131056,
  reEngagementMessage: 131047,
  mediaUploadError: 131053,
  templateParamCountMismatch: 132000,
  templateDoesNotExist: 132001,
} as const;

/** Codes that refuse a call as too many, too fast: nothing was accepted, so it may be made again later. */
const rateLimitCodes = new Set<number>([
  graphCodes.apiTooManyCalls,
  graphCodes.rateLimitIssues,
  graphCodes.rateLimitHit,
  graphCodes.pairRateLimitHit,
]);

/**
 * The Cloud API's error object, mapped: 131047 is the closed window; the template codes pass through;
 * 190 means the access token no longer works; the rate limits say so; the rest is a provider failure.
 */
export function graphFailure(status: number, body: unknown): Error {
  const parsed = GraphErrorBody.safeParse(body);
  if (!parsed.success) return new ProviderError(`chat-official answered ${status}`, status);
  const { code, message, error_data } = parsed.data.error;
  if (code === graphCodes.reEngagementMessage) return AppError.windowClosed();
  // The provider's own words stay in our records (the error's detail), never in the caller's answer:
  // they are someone else's text, unbounded, and may name things of another account.
  const detail = new Error(
    providerWords(`chat-official error ${code}: ${error_data?.details ?? message ?? ''}`),
  );
  // The template codes pass through with our texts, when our copy of the catalogue was stale.
  if (code === graphCodes.templateDoesNotExist)
    return AppError.template(132001, platformTexts.templateRefusedByProvider, detail);
  if (code === graphCodes.templateParamCountMismatch)
    return AppError.template(132000, platformTexts.templateVariablesRefused, detail);
  if (code === graphCodes.mediaUploadError)
    return AppError.template(131053, platformTexts.templateMediaRejected, detail);
  const refusal: ProviderRefusal | undefined =
    code === graphCodes.accessTokenInvalid || refusesAppSecret(code, message)
      ? 'credentials_rejected'
      : rateLimitCodes.has(code)
        ? 'rate_limited'
        : undefined;
  return new ProviderError(detail.message, status, code, refusal ? { refusal } : undefined);
}

/**
 * Throughput (130429) is counted per second, so a short wait usually clears it: a send refused with it
 * is tried again after 1 s and 2 s, within the call's deadline. The pair limit (131056) needs seconds to
 * minutes between messages to one number, so it is told to the caller instead.
 */
const throughputRetryPausesMs = [1_000, 2_000];

const SendAnswer = z.object({ messages: z.array(z.object({ id: z.string().min(1) })).min(1) });

const TemplatePage = z.object({
  data: z.array(
    z.object({
      name: z.string(),
      language: z.string(),
      status: z.string(),
      components: z.array(
        z
          .object({
            type: z.string(),
            text: z.string().optional(),
            format: z.string().optional(),
            buttons: z.array(z.record(z.string(), z.unknown())).optional(),
          })
          .passthrough(),
      ),
    }),
  ),
  paging: z.object({ next: z.string().optional() }).optional(),
});

/** Meta batches: one POST may carry several entries, each several changes. Each change is read alone. */
const Envelope = z.object({
  entry: z.array(z.object({ changes: z.array(z.unknown()) })),
});

const Change = z.object({
  field: z.string(),
  value: z.object({
    // Since April 2026 a contact also has a business-scoped user id (BSUID, `user_id`); a user who took a
    // username may have no number at all (`wa_id`, `from` omitted): Meta's business-scoped user ids guide.
    contacts: z
      .array(
        z.object({
          wa_id: z.string().optional(),
          user_id: z.string().optional(),
          profile: z.object({ name: z.string().optional() }).optional(),
        }),
      )
      .optional(),
    // Each message is read alone (CloudMessage): one of an unexpected shape costs none of the others.
    messages: z.array(z.unknown()).optional(),
    statuses: z
      .array(
        z.object({
          id: z.string(),
          status: z.string(),
          timestamp: z.string().optional(),
          biz_opaque_callback_data: z.string().optional(),
          errors: z
            .array(
              z.object({
                code: z.number(),
                title: z.string().optional(),
                message: z.string().optional(),
                error_data: z.object({ details: z.string().optional() }).optional(),
              }),
            )
            .optional(),
        }),
      )
      .optional(),
  }),
});
type Change = z.infer<typeof Change>;

// An id or a time messaging cannot read is left to the check every inbound item passes (inbound.ts).
const CloudMessage = z.looseObject({
  id: z.string(),
  timestamp: z.string(),
  type: z.string(),
  from: z.string().optional(),
  from_user_id: z.string().min(1).optional(),
});
const knownStatuses = new Set(['sent', 'delivered', 'read', 'failed']);

const bearer = (config: ChatOfficialConfig) => ({ authorization: `Bearer ${config.access_token}` });

/** Every Graph call carries the app's proof: see `appSecretProof`. */
function withProof(config: ChatOfficialConfig, url: URL): URL {
  url.searchParams.set('appsecret_proof', appSecretProof(config.app_secret, config.access_token));
  return url;
}

const graphUrl = (config: ChatOfficialConfig, node: string, edge?: string) =>
  withProof(
    config,
    joinUrl(
      config.base_url,
      `${config.api_version}/${encodeURIComponent(node)}${edge === undefined ? '' : `/${edge}`}`,
    ),
  );

/** POST /{version}/{phone_number_id}/messages: the one call both text and template sends make. */
async function postMessage(config: ChatOfficialConfig, message: Record<string, unknown>, call: ProviderCall) {
  const url = graphUrl(config, config.phone_number_id, 'messages');
  for (let attempt = 0; ; attempt++) {
    const answer = await callProvider(call, 'chat-official', url, {
      method: 'POST',
      headers: bearer(config),
      body: {
        messaging_product: 'whatsapp',
        recipient_type: 'individual',
        ...message,
        // Meta echoes it in the message's statuses: a send whose answer never reached us (the process
        // died during the call) is still recognised as ours, and as sent, by its first status.
        ...(call.messageId ? { biz_opaque_callback_data: call.messageId } : {}),
      },
    });
    if (answer.ok) {
      const parsed = SendAnswer.safeParse(answer.body);
      if (!parsed.success)
        throw new ProviderError('chat-official answered without a message id', answer.status);
      return { providerMessageId: parsed.data.messages[0]!.id };
    }
    const failure = graphFailure(answer.status, answer.body);
    const wait = throughputRetryPausesMs[attempt];
    const throughput = failure instanceof ProviderError && failure.providerCode === graphCodes.rateLimitHit;
    if (!throughput || wait === undefined || !(await paused(wait, call.signal))) throw failure;
    call.logger.info(
      { phone_number_id: config.phone_number_id, attempt: attempt + 1 },
      'chat-official throughput limit (130429): sending again',
    );
  }
}

/**
 * A number goes in `to`; a contact known only by its business-scoped user id (a user with a username and
 * no number shown) is addressed by `recipient`, as Meta's business-scoped user ids guide has it.
 */
const addressed = (to: string) => (/^\d+$/.test(to) ? { to } : { recipient: to });

/** False when the call's deadline came first. */
async function paused(ms: number, signal: AbortSignal): Promise<boolean> {
  try {
    await pause(ms, undefined, { signal });
    return true;
  } catch {
    return false;
  }
}

/** The statuses of one change, each with its error, if any, as `code title: details`. */
function statusesOf(change: Change): StatusUpdate[] {
  const statuses: StatusUpdate[] = [];
  for (const s of change.value.statuses ?? []) {
    if (!knownStatuses.has(s.status)) continue;
    const error = s.errors?.[0];
    const details = error?.error_data?.details;
    statuses.push({
      providerMessageId: s.id,
      status: s.status as StatusUpdate['status'],
      error: error
        ? `${error.code} ${error.title ?? error.message ?? ''}`.trim() + (details ? `: ${details}` : '')
        : null,
      errorCode: error?.code ?? null,
      ...(s.timestamp && /^\d+$/.test(s.timestamp) ? { at: new Date(Number(s.timestamp) * 1000) } : {}),
      ...(s.biz_opaque_callback_data ? { ourMessageId: s.biz_opaque_callback_data } : {}),
    });
  }
  return statuses;
}

/** The customers' messages of one change; one that names no sender, or of an unknown shape, is unreadable. */
function messagesOf(change: Change, batch: InboundBatch): void {
  const contacts = change.value.contacts ?? [];
  for (const raw of change.value.messages ?? []) {
    const parsed = CloudMessage.safeParse(raw);
    if (!parsed.success) {
      const id = (raw as { id?: unknown } | null)?.id;
      if (typeof id === 'string' && id) unreadable(batch, id, 'a message of an unknown shape');
      continue;
    }
    const m = parsed.data;
    const content = cloudMessageContent(m);
    if (!content) continue;
    const phone = m.from?.replace(/\D/g, '') ?? '';
    // A number when Meta gives one, so a customer's contact stays the one it was; the BSUID otherwise.
    const sender: Pick<InboundMessage, 'from' | 'keyedBy' | 'userId'> | undefined = phone
      ? { from: phone, ...(m.from_user_id ? { userId: m.from_user_id } : {}) }
      : m.from_user_id
        ? { from: m.from_user_id, keyedBy: 'user_id' }
        : undefined;
    if (!sender) {
      unreadable(batch, m.id, 'a message naming neither a number nor a user id');
      continue;
    }
    const contact = contacts.find(
      (c) =>
        (m.from !== undefined && c.wa_id === m.from) ||
        (m.from_user_id !== undefined && c.user_id === m.from_user_id),
    );
    batch.messages.push({
      providerMessageId: m.id,
      ...sender,
      name: contact?.profile?.name || null,
      ...content,
      sentAt: new Date(Number(m.timestamp) * 1000),
    });
  }
}

function unreadable(batch: InboundBatch, providerMessageId: string, reason: string): void {
  batch.unreadable = [...(batch.unreadable ?? []), { providerMessageId, reason: `chat-official: ${reason}` }];
}

/** The next template page, when the provider named one on the base_url's origin; elsewhere paging stops. */
function nextPage(next: string | undefined, config: ChatOfficialConfig, call: ProviderCall): URL | undefined {
  if (!next) return undefined;
  const url = URL.canParse(next) ? new URL(next) : undefined;
  if (url?.origin === new URL(config.base_url).origin) return withProof(config, url);
  call.logger.warn(
    { phone_number_id: config.phone_number_id, next_origin: url?.origin ?? null },
    'template list: paging.next leaves the base_url origin, not followed',
  );
  return undefined;
}

/** chat-official speaks the Cloud API: `/{version}/{phone_number_id}/messages`, bearer token, signed callbacks. */
export const chatOfficialAdapter: ChannelAdapter<'chat-official'> = {
  channel: 'chat-official',

  sendText: (config, message, call) =>
    postMessage(
      config,
      { ...addressed(message.to), type: 'text', text: { body: message.text, preview_url: false } },
      call,
    ),

  /**
   * Meta delivers a WABA's webhooks only to apps subscribed to it, and refuses a phone number's callback
   * override until the app is: subscribe first (without a body, which keeps no WABA-wide override), then
   * set the number's own callback, which Meta checks with the hub.challenge handshake.
   */
  async registerInbound(config, callbackUrl, call) {
    const subscribed = await callProvider(
      call,
      'chat-official',
      graphUrl(config, config.waba_id, 'subscribed_apps'),
      {
        method: 'POST',
        headers: bearer(config),
      },
    );
    if (!subscribed.ok) throw graphFailure(subscribed.status, subscribed.body);
    const overridden = await callProvider(call, 'chat-official', graphUrl(config, config.phone_number_id), {
      method: 'POST',
      headers: bearer(config),
      body: {
        webhook_configuration: { override_callback_uri: callbackUrl, verify_token: config.verify_token },
      },
    });
    if (!overridden.ok) {
      const failure = graphFailure(overridden.status, overridden.body);
      // An invalid parameter here is the callback URL (or its token) that Meta will not take.
      if (
        failure instanceof ProviderError &&
        failure.providerCode === graphCodes.invalidParameter &&
        failure.refusal === undefined
      ) {
        throw new ProviderError(failure.message, failure.status, failure.providerCode, {
          refusal: 'callback_refused',
        });
      }
      throw failure;
    }
  },

  // "Maximum 200 characters", and Meta calls only HTTPS endpoints with a valid certificate.
  callbackUrlRules: { httpsOnly: true, maxLength: 200 },

  // "Webhooks payloads can be up to 3MB" (developers.facebook.com/docs/whatsapp/cloud-api/webhooks); one
  // refused is retried for up to 7 days and then dropped.
  callbackBodyBytes: 3 * 1024 * 1024,

  templates: {
    /**
     * Every page of the WABA's template list, following `paging.next` (bounded, in case it loops) only
     * on the base_url's own origin: the bearer token goes with every page.
     */
    async list(config, call) {
      const templates: ProviderTemplate[] = [];
      let chars = 0;
      let url: URL | undefined = graphUrl(config, config.waba_id, 'message_templates');
      url.searchParams.set('limit', '100');
      for (let page = 0; url && page < 100; page++) {
        const answer = await callProvider(call, 'chat-official', url, {
          method: 'GET',
          headers: bearer(config),
        });
        if (!answer.ok) throw graphFailure(answer.status, answer.body);
        const parsed = TemplatePage.parse(answer.body);
        if (templates.length + parsed.data.length > maxCatalogueTemplates) {
          throw new AppError(502, { error: platformTexts.templateCatalogueTooLarge(maxCatalogueTemplates) });
        }
        for (const template of parsed.data) {
          const body = template.components.find((c) => c.type.toUpperCase() === 'BODY');
          const header = template.components.find((c) => c.type.toUpperCase() === 'HEADER');
          const buttons = template.components.find((c) => c.type.toUpperCase() === 'BUTTONS')?.buttons ?? [];
          const kept = {
            name: template.name,
            language: template.language,
            status: template.status.toUpperCase(),
            body: body?.text ?? '',
            header_format: header?.format?.toUpperCase() ?? null,
            buttons: buttonValues(buttons) === undefined ? [] : buttons,
          };
          chars += templateChars(kept);
          if (chars > maxCatalogueChars) {
            throw new AppError(502, { error: platformTexts.templateCatalogueTooMuchText(maxCatalogueChars) });
          }
          templates.push(kept);
        }
        url = nextPage(parsed.paging?.next, config, call);
      }
      return templates;
    },

    send: (config, { to, template }: { to: string; template: TemplateSend }, call) =>
      postMessage(
        config,
        {
          to,
          type: 'template',
          template: {
            name: template.name,
            language: { code: template.language },
            components: templateComponents(template),
          },
        },
        call,
      ),
  },

  answerHandshake: (config, query) => hubChallengeAnswer(config.verify_token, query),

  /**
   * Verified over the raw bytes (see hubSignatureMatches). Every change of every entry is read, each on
   * its own, so one change of an unknown shape does not cost the others.
   */
  readInbound(config, request): InboundBatch {
    if (!hubSignatureMatches(config.app_secret, request.rawBody, request.headers)) {
      throw new InboundRejected('X-Hub-Signature-256 does not match');
    }
    const batch: InboundBatch = { messages: [], statuses: [] };
    const envelope = Envelope.safeParse(JSON.parse(request.rawBody.toString('utf8')));
    if (!envelope.success) return batch;
    for (const raw of envelope.data.entry.flatMap((entry) => entry.changes)) {
      const change = Change.safeParse(raw);
      if (!change.success || change.data.field !== 'messages') continue;
      messagesOf(change.data, batch);
      batch.statuses.push(...statusesOf(change.data));
    }
    return batch;
  },
};
