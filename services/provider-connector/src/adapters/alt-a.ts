import { z } from 'zod';
import { type ChannelAdapter, ProviderError } from './channel-adapter.js';

const required = (key: string) =>
  z.string({ error: `config.${key} é obrigatório` }).min(1, { error: `config.${key} é obrigatório` });

const AltAConfig = z.object({
  base_url: z.url({ protocol: /^https?$/, error: 'config.base_url deve ser uma URL http(s)' }),
  instance: required('instance'),
  api_key: required('api_key'),
});
type AltAConfig = z.infer<typeof AltAConfig>;

const SendTextAnswer = z.object({ key: z.object({ id: z.string().min(1) }) });

/** alt-a speaks the Evolution API v2: `POST /message/sendText/{instance}` with an `apikey` header. */
export const altAAdapter: ChannelAdapter<AltAConfig> = {
  channel: 'alt-a',
  config: AltAConfig,
  accountId: (config) => config.instance,
  async sendText(config, message, signal) {
    const url = new URL(
      `message/sendText/${encodeURIComponent(config.instance)}`,
      withSlash(config.base_url),
    );
    let response: Response;
    try {
      response = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', apikey: config.api_key },
        body: JSON.stringify({ number: message.to, text: message.text }),
        signal,
      });
    } catch (error) {
      throw new ProviderError(`alt-a unreachable: ${(error as Error).message}`, undefined, undefined, {
        cause: error,
      });
    }
    const body: unknown = await response.json().catch(() => undefined);
    if (!response.ok) throw new ProviderError(`alt-a answered ${response.status}`, response.status);
    const parsed = SendTextAnswer.safeParse(body);
    if (!parsed.success) throw new ProviderError('alt-a answered without a message id', response.status);
    return { providerMessageId: parsed.data.key.id };
  },
};

function withSlash(base: string): string {
  return base.endsWith('/') ? base : `${base}/`;
}
