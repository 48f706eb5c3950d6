import type { IntegrationChannel } from '@inbox/contracts';
import type { z } from 'zod';

export interface OutboundText {
  /** Recipient in E.164 without the `+`, as providers take it. */
  to: string;
  text: string;
}

/** One channel provider's wire format, behind the operations the connector needs. */
export interface ChannelAdapter<C extends Record<string, string> = Record<string, string>> {
  channel: IntegrationChannel;
  /** The credentials and `base_url` the provider needs; validated when an integration is created. */
  config: z.ZodType<C>;
  /** The provider-side account id that inbound messages carry. */
  accountId(config: C): string;
  sendText(config: C, message: OutboundText, signal: AbortSignal): Promise<{ providerMessageId: string }>;
}

/** A provider answered with an error or could not be reached; the connector maps it to the API's 502. */
export class ProviderError extends Error {
  override name = 'ProviderError';
  constructor(
    message: string,
    readonly status?: number,
    readonly providerCode?: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
