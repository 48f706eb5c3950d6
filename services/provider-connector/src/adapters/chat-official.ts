import { createHmac, timingSafeEqual } from 'node:crypto';
import { AppError, type ChannelConfig, platformTexts, type TemplateSend } from '@inbox/contracts';
import { z } from 'zod';
import { templateComponents } from '../domain/template-rules.js';
import {
  type ChannelAdapter,
  type InboundMessage,
  InboundRejected,
  type ProviderCall,
  ProviderError,
  type StatusUpdate,
} from './channel-adapter.js';
import { sameSecret } from './constant-time.js';
import { callProvider, headerValue, joinUrl } from './http.js';

type ChatOfficialConfig = ChannelConfig<'chat-official'>;

const GraphError = z.object({
  error: z.object({
    code: z.number(),
    message: z.string().optional(),
    error_data: z.object({ details: z.string().optional() }).optional(),
  }),
});

/** The Cloud API's error object, mapped: 131047 is the closed window; the rest is a provider failure. */
export function graphFailure(status: number, body: unknown): Error {
  const parsed = GraphError.safeParse(body);
  if (!parsed.success) return new ProviderError(`chat-official answered ${status}`, status);
  const { code, message, error_data } = parsed.data.error;
  if (code === 131047) return AppError.windowClosed();
  // The provider's own words stay in our records (the error's detail), never in the caller's answer:
  // they are someone else's text, unbounded, and may name things of another account.
  const detail = new Error(`chat-official error ${code}: ${error_data?.details ?? message ?? ''}`);
  // The template codes pass through with our texts, when our copy of the catalogue was stale.
  if (code === 132001) return AppError.template(132001, platformTexts.templateRefusedByProvider, detail);
  if (code === 132000) return AppError.template(132000, platformTexts.templateVariablesRefused, detail);
  if (code === 131053) return AppError.template(131053, platformTexts.templateMediaRejected, detail);
  return new ProviderError(detail.message, status, code);
}

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

const Notification = z.object({
  object: z.string(),
  entry: z.array(
    z.object({
      changes: z.array(
        z.object({
          field: z.string(),
          value: z.object({
            contacts: z
              .array(z.object({ wa_id: z.string(), profile: z.object({ name: z.string() }).optional() }))
              .optional(),
            messages: z
              .array(
                z.object({
                  from: z.string(),
                  id: z.string(),
                  timestamp: z.string(),
                  type: z.string(),
                  text: z.object({ body: z.string() }).optional(),
                }),
              )
              .optional(),
            statuses: z
              .array(
                z.object({
                  id: z.string(),
                  status: z.string(),
                  errors: z.array(z.object({ code: z.number(), title: z.string().optional() })).optional(),
                }),
              )
              .optional(),
          }),
        }),
      ),
    }),
  ),
});

const knownTypes = new Set(['text', 'image', 'audio', 'video', 'document', 'location']);
const knownStatuses = new Set(['sent', 'delivered', 'read', 'failed']);

function verifySignature(appSecret: string, rawBody: Buffer, header: string | undefined): boolean {
  const expected = Buffer.from(`sha256=${createHmac('sha256', appSecret).update(rawBody).digest('hex')}`);
  const given = Buffer.from(header ?? '');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** POST /{version}/{phone_number_id}/messages: the one call both text and template sends make. */
async function postMessage(config: ChatOfficialConfig, message: Record<string, unknown>, call: ProviderCall) {
  const url = joinUrl(
    config.base_url,
    `${config.api_version}/${encodeURIComponent(config.phone_number_id)}/messages`,
  );
  const answer = await callProvider(call, 'chat-official', url, {
    method: 'POST',
    headers: { authorization: `Bearer ${config.access_token}` },
    body: { messaging_product: 'whatsapp', recipient_type: 'individual', ...message },
  });
  if (!answer.ok) throw graphFailure(answer.status, answer.body);
  const parsed = SendAnswer.safeParse(answer.body);
  if (!parsed.success) throw new ProviderError('chat-official answered without a message id', answer.status);
  return { providerMessageId: parsed.data.messages[0]!.id };
}

/** The next template page, when the provider named one on the base_url's origin; elsewhere paging stops. */
function nextPage(next: string | undefined, config: ChatOfficialConfig, call: ProviderCall): URL | undefined {
  if (!next) return undefined;
  const url = URL.canParse(next) ? new URL(next) : undefined;
  if (url?.origin === new URL(config.base_url).origin) return url;
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
      { to: message.to, type: 'text', text: { body: message.text, preview_url: false } },
      call,
    ),

  // The phone number's own webhook override; the provider checks it with the hub.challenge handshake.
  async registerInbound(config, callbackUrl, call) {
    const url = joinUrl(
      config.base_url,
      `${config.api_version}/${encodeURIComponent(config.phone_number_id)}`,
    );
    const answer = await callProvider(call, 'chat-official', url, {
      method: 'POST',
      headers: { authorization: `Bearer ${config.access_token}` },
      body: {
        webhook_configuration: { override_callback_uri: callbackUrl, verify_token: config.verify_token },
      },
    });
    if (!answer.ok) throw graphFailure(answer.status, answer.body);
  },

  templates: {
    /**
     * Every page of the WABA's template list, following `paging.next` (bounded, in case it loops) only
     * on the base_url's own origin: the bearer token goes with every page.
     */
    async list(config, call) {
      const templates = [];
      let url: URL | undefined = joinUrl(
        config.base_url,
        `${config.api_version}/${encodeURIComponent(config.waba_id)}/message_templates`,
      );
      url.searchParams.set('limit', '100');
      for (let page = 0; url && page < 100; page++) {
        const answer = await callProvider(call, 'chat-official', url, {
          method: 'GET',
          headers: { authorization: `Bearer ${config.access_token}` },
        });
        if (!answer.ok) throw graphFailure(answer.status, answer.body);
        const parsed = TemplatePage.parse(answer.body);
        for (const template of parsed.data) {
          const body = template.components.find((c) => c.type.toUpperCase() === 'BODY');
          const header = template.components.find((c) => c.type.toUpperCase() === 'HEADER');
          const buttons = template.components.find((c) => c.type.toUpperCase() === 'BUTTONS');
          templates.push({
            name: template.name,
            language: template.language,
            status: template.status.toUpperCase(),
            body: body?.text ?? '',
            header_format: header?.format?.toUpperCase() ?? null,
            buttons: buttons?.buttons ?? [],
          });
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

  answerHandshake(config, query) {
    if (query['hub.mode'] !== 'subscribe' || typeof query['hub.challenge'] !== 'string') return undefined;
    return sameSecret(query['hub.verify_token'] as string | undefined, config.verify_token)
      ? query['hub.challenge']
      : undefined;
  },

  readInbound(config, request) {
    if (
      !verifySignature(
        config.app_secret,
        request.rawBody,
        headerValue(request.headers, 'x-hub-signature-256'),
      )
    ) {
      throw new InboundRejected('X-Hub-Signature-256 does not match');
    }
    const parsed = Notification.safeParse(JSON.parse(request.rawBody.toString('utf8')));
    const messages: InboundMessage[] = [];
    const statuses: StatusUpdate[] = [];
    if (!parsed.success) return { messages, statuses };
    for (const change of parsed.data.entry.flatMap((entry) => entry.changes)) {
      if (change.field !== 'messages') continue;
      const names = new Map((change.value.contacts ?? []).map((c) => [c.wa_id, c.profile?.name ?? null]));
      for (const m of change.value.messages ?? []) {
        messages.push({
          providerMessageId: m.id,
          from: m.from.replace(/\D/g, ''),
          name: names.get(m.from) || null,
          text: m.text?.body ?? '',
          type: (knownTypes.has(m.type) ? m.type : 'others') as InboundMessage['type'],
          sentAt: new Date(Number(m.timestamp) * 1000),
        });
      }
      for (const s of change.value.statuses ?? []) {
        if (!knownStatuses.has(s.status)) continue;
        const error = s.errors?.[0];
        statuses.push({
          providerMessageId: s.id,
          status: s.status as StatusUpdate['status'],
          error: error ? `${error.code} ${error.title ?? ''}`.trim() : null,
        });
      }
    }
    return { messages, statuses };
  },
};
