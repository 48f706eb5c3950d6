import { z } from 'zod';
import { type ChannelAdapter, InboundRejected, ProviderError } from './channel-adapter.js';
import { sameSecret } from './constant-time.js';
import { callProvider, joinUrl } from './http.js';

const SendTextAnswer = z.object({ key: z.object({ id: z.string().min(1) }) });

const MessagesUpsert = z.object({
  event: z.string(),
  apikey: z.string().optional(),
  data: z.object({
    key: z.object({ remoteJid: z.string(), fromMe: z.boolean(), id: z.string().min(1) }),
    pushName: z.string().optional(),
    message: z.object({ conversation: z.string().optional() }).passthrough().optional(),
    messageTimestamp: z.number().optional(),
  }),
});

/** alt-a speaks the Evolution API v2: an instance per number, an `apikey` on every call. */
export const altAAdapter: ChannelAdapter<'alt-a'> = {
  channel: 'alt-a',

  async sendText(config, message, call) {
    const answer = await callProvider(
      call,
      'alt-a',
      joinUrl(config.base_url, `message/sendText/${encodeURIComponent(config.instance)}`),
      {
        method: 'POST',
        headers: { apikey: config.api_key },
        body: { number: message.to, text: message.text },
      },
    );
    if (!answer.ok) throw new ProviderError(`alt-a answered ${answer.status}`, answer.status);
    const parsed = SendTextAnswer.safeParse(answer.body);
    if (!parsed.success) throw new ProviderError('alt-a answered without a message id', answer.status);
    return { providerMessageId: parsed.data.key.id };
  },

  async registerInbound(config, callbackUrl, call) {
    const answer = await callProvider(
      call,
      'alt-a',
      joinUrl(config.base_url, `webhook/set/${encodeURIComponent(config.instance)}`),
      {
        method: 'POST',
        headers: { apikey: config.api_key },
        body: {
          webhook: {
            enabled: true,
            url: callbackUrl,
            events: ['MESSAGES_UPSERT'],
            webhookByEvents: false,
            webhookBase64: false,
          },
        },
      },
    );
    if (!answer.ok) throw new ProviderError(`alt-a refused the webhook (${answer.status})`, answer.status);
  },

  // Evolution does not sign its callbacks; it repeats the instance's apikey in the body, which we check.
  readInbound(config, request) {
    const parsed = MessagesUpsert.safeParse(JSON.parse(request.rawBody.toString('utf8')));
    if (!parsed.success) return { messages: [], statuses: [] };
    if (!sameSecret(parsed.data.apikey, config.api_key))
      throw new InboundRejected('alt-a apikey does not match');
    const { data, event } = parsed.data;
    if (event !== 'messages.upsert' || data.key.fromMe) return { messages: [], statuses: [] };
    const text = data.message?.conversation;
    return {
      messages: [
        {
          providerMessageId: data.key.id,
          from: data.key.remoteJid.split('@')[0]!.replace(/\D/g, ''),
          name: data.pushName || null,
          text: text ?? '',
          type: text === undefined ? 'others' : 'text',
          sentAt: data.messageTimestamp ? new Date(data.messageTimestamp * 1000) : new Date(),
        },
      ],
      statuses: [],
    };
  },
};
