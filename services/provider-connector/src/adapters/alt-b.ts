import { AppError, type ChannelConfig, platformTexts } from '@inbox/contracts';
import { z } from 'zod';
import { type ChannelAdapter, InboundRejected, ProviderError } from './channel-adapter.js';
import { sameSecret } from './constant-time.js';
import { callProvider, headerValue, joinUrl } from './http.js';

type AltBConfig = ChannelConfig<'alt-b'>;
type CompleteAltBConfig = Required<AltBConfig>;

function complete(config: AltBConfig): CompleteAltBConfig | undefined {
  return config.instance_id && config.token && config.client_token
    ? (config as CompleteAltBConfig)
    : undefined;
}

function instancePath(config: CompleteAltBConfig, action: string): string {
  return `instances/${encodeURIComponent(config.instance_id)}/token/${encodeURIComponent(config.token)}/${action}`;
}

const SendTextAnswer = z.object({ messageId: z.string().min(1) });
const ReceivedCallback = z.object({
  type: z.string(),
  fromMe: z.boolean(),
  messageId: z.string().min(1),
  phone: z.string(),
  senderName: z.string().optional(),
  chatName: z.string().optional(),
  momment: z.number().optional(),
  text: z.object({ message: z.string() }).optional(),
});

/** alt-b speaks a Z-API style API: instance id and token in the path, a `Client-Token` header. */
export const altBAdapter: ChannelAdapter<'alt-b'> = {
  channel: 'alt-b',

  async sendText(config, message, call) {
    const credentials = complete(config);
    if (!credentials) throw new AppError(500, { error: platformTexts.altBCredentialsIncomplete });
    const answer = await callProvider(
      call,
      'alt-b',
      joinUrl(config.base_url, instancePath(credentials, 'send-text')),
      {
        method: 'POST',
        headers: { 'client-token': credentials.client_token },
        body: { phone: message.to, message: message.text },
      },
    );
    if (!answer.ok) throw new ProviderError(`alt-b answered ${answer.status}`, answer.status);
    const parsed = SendTextAnswer.safeParse(answer.body);
    if (!parsed.success) throw new ProviderError('alt-b answered without a message id', answer.status);
    return { providerMessageId: parsed.data.messageId };
  },

  async registerInbound(config, callbackUrl, call) {
    const credentials = complete(config);
    // Nothing to register with yet; sends will answer the incomplete-credentials error.
    if (!credentials) return;
    const answer = await callProvider(
      call,
      'alt-b',
      joinUrl(config.base_url, instancePath(credentials, 'update-webhook-received')),
      {
        method: 'PUT',
        headers: { 'client-token': credentials.client_token },
        body: { value: callbackUrl },
      },
    );
    if (!answer.ok) throw new ProviderError(`alt-b refused the webhook (${answer.status})`, answer.status);
  },

  // alt-b does not sign callbacks; it sends the instance's Client-Token, which we check.
  readInbound(config, request) {
    const credentials = complete(config);
    if (!credentials || !sameSecret(headerValue(request.headers, 'client-token'), credentials.client_token)) {
      throw new InboundRejected('alt-b client token does not match');
    }
    const parsed = ReceivedCallback.safeParse(JSON.parse(request.rawBody.toString('utf8')));
    if (!parsed.success || parsed.data.type !== 'ReceivedCallback' || parsed.data.fromMe) {
      return { messages: [], statuses: [] };
    }
    const data = parsed.data;
    return {
      messages: [
        {
          providerMessageId: data.messageId,
          from: data.phone.replace(/\D/g, ''),
          name: data.senderName || null,
          text: data.text?.message ?? '',
          type: data.text ? 'text' : 'others',
          sentAt: data.momment ? new Date(data.momment) : new Date(),
        },
      ],
      statuses: [],
    };
  },
};
