import { z } from 'zod';
import { platformTexts } from './error-texts.js';
import { integrationConfigLimits } from './workspace-limits.js';

/** An integration's config as it is stored: the credentials and addresses the provider needs, all strings. */
export type StoredConfig = Record<string, string>;

/**
 * What the platform knows of one channel. Everything that varies by channel (validation and its texts,
 * the webhooks' provider value, the window check, the connector's adapters) reads it from this table,
 * so adding a channel is a descriptor here, an adapter in the connector and an emulator in the sandbox.
 */
export interface ChannelDescriptor<Config extends StoredConfig = StoredConfig> {
  /** The provider value webhooks show for the channel's integrations. */
  provider: string;
  /** Selectable as `channel` in send-message. */
  sendMessage: boolean;
  /** External send reaches the channel's conversations. */
  externalSend: boolean;
  /** The provider delivers the contacts' messages to us. */
  receivesInbound: boolean;
  /**
   * Free text only within 24 hours of the contact's last message; beyond them, a template where the
   * channel has templates, and nothing at all where it has none (Messenger's and Instagram's standard
   * messaging window).
   */
  hasWindow: boolean;
  /** Approved templates (HSM): a catalogue to list and template sends. */
  hasTemplates: boolean;
  /**
   * A person of the team may reply from the panel even though external send does not reach the
   * channel's conversations (the spec's external send lists five channels; the others still need replies).
   */
  panelReply?: true;
  /** The integration's config, checked when it is created. */
  config: z.ZodType<Config>;
  /** The provider-side account id that inbound messages carry. */
  accountId(config: Config, integrationId: string): string;
  /**
   * The provider neither signs its callbacks nor sends them with a credential of the tenant's, so the
   * connector makes one: a secret per integration, generated when it is created, kept in its sealed
   * config as `callback_secret` (never shown), and registered where the provider repeats it on every
   * callback (in the callback URL, or a header the provider is told to send). The config schema must
   * keep that key (`generatedCallbackSecret`).
   */
  callbackSecret?: true;
}

/** A token the Bot API server passes on to Telegram: `<bot id>:<secret>`, at most 80 characters, its id 1 to 2^54 - 1. */
function isBotToken(token: string): boolean {
  const shape = /^([1-9]\d{0,16}):[\w-]+$/.exec(token);
  return shape !== null && token.length <= 80 && BigInt(shape[1]!) < 2n ** 54n;
}

const required = (key: string) =>
  z.string({ error: platformTexts.configRequired(key) }).min(1, { error: platformTexts.configRequired(key) });
const baseUrl = z.url({ protocol: /^https?$/, error: platformTexts.configBaseUrlInvalid });
/**
 * Set by the connector when the integration is created (a value given by the caller is replaced);
 * optional only because integrations stored before it existed lack it, and their callbacks are refused.
 */
const generatedCallbackSecret = z.string().min(1).optional();

/**
 * The origins a live chat widget may be embedded in, as stored: one string (configs are strings), the
 * origins separated by commas or spaces, each exactly `scheme://host[:port]` as a browser's Origin
 * header spells it (no path, no trailing slash), so the check is a plain comparison.
 */
export function readAllowedOrigins(value: string): string[] | undefined {
  const origins = value.split(/[\s,]+/).filter((origin) => origin.length > 0);
  if (origins.length === 0) return undefined;
  for (const origin of origins) {
    if (!URL.canParse(origin)) return undefined;
    const url = new URL(origin);
    if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.origin !== origin) return undefined;
  }
  return origins;
}
const allowedOrigins = z
  .string({ error: platformTexts.configRequired('allowed_origins') })
  .min(1, { error: platformTexts.configRequired('allowed_origins') })
  .refine((value) => readAllowedOrigins(value) !== undefined, {
    error: platformTexts.configAllowedOriginsInvalid,
  })
  .refine((value) => (readAllowedOrigins(value)?.length ?? 0) <= integrationConfigLimits.allowedOrigins, {
    error: platformTexts.configAllowedOriginsTooMany(integrationConfigLimits.allowedOrigins),
  });

/**
 * Infers the entry's config from its schema and keeps its flags and provider as literal types, so the
 * lists derived from the table (send-message's channels, the providers) are typed as precisely.
 */
const describe = <Config extends StoredConfig, const Entry extends Omit<ChannelDescriptor<Config>, 'config'>>(
  config: z.ZodType<Config>,
  entry: Entry,
): Entry & ChannelDescriptor<Config> => ({ ...entry, config });

/** The channels, in the order the API's texts and enums list them. */
export const channelDescriptors = {
  'chat-official': describe(
    z.object({
      base_url: baseUrl,
      phone_number_id: required('phone_number_id'),
      waba_id: required('waba_id'),
      access_token: required('access_token'),
      app_secret: required('app_secret'),
      verify_token: required('verify_token'),
      api_version: z
        .string()
        .regex(/^v\d+\.\d+$/, { error: platformTexts.configApiVersionInvalid })
        .default('v21.0'),
    }),
    {
      provider: 'chat-official',
      sendMessage: true,
      externalSend: true,
      receivesInbound: true,
      hasWindow: true,
      hasTemplates: true,
      accountId: (config) => config.phone_number_id,
    },
  ),
  // Evolution API v2 signs nothing and sends `apikey: null` in its callbacks unless the operator sets
  // AUTHENTICATION_EXPOSE_IN_FETCH_INSTANCES; it does send the headers its webhook was set with.
  'alt-a': describe(
    z.object({
      base_url: baseUrl,
      instance: required('instance'),
      api_key: required('api_key'),
      callback_secret: generatedCallbackSecret,
    }),
    {
      provider: 'chat',
      sendMessage: true,
      externalSend: true,
      receivesInbound: true,
      hasWindow: false,
      hasTemplates: false,
      accountId: (config) => config.instance,
      callbackSecret: true,
    },
  ),
  // The credentials may be incomplete when the integration is created; a send then fails with the
  // spec's 500 rather than the integration being refused. `client_token` is Z-API's optional account
  // security token (off until the account turns it on), so it is never required. Z-API sends no
  // credential with its callbacks and only calls HTTPS URLs.
  'alt-b': describe(
    z.object({
      base_url: baseUrl,
      instance_id: z.string().optional(),
      token: z.string().optional(),
      client_token: z.string().optional(),
      callback_secret: generatedCallbackSecret,
    }),
    {
      provider: 'chat',
      sendMessage: true,
      externalSend: true,
      receivesInbound: true,
      hasWindow: false,
      hasTemplates: false,
      accountId: (config) => config.instance_id ?? '',
      callbackSecret: true,
    },
  ),
  // Telegram Bot API. The token is `<bot id>:<secret>`: the bot's id, the part before the colon, is
  // the account; the whole token is a credential and never an id. `secret_token` is what setWebhook
  // registers and Telegram repeats in `X-Telegram-Bot-Api-Secret-Token` on every update.
  bot: describe(
    z.object({
      // BotFather's tokens are `<bot id>:<secret>`; the Bot API server refuses, before Telegram sees it, one
      // over 80 characters or whose id starts with 0 or is 2^54 or more (ClientManager::send).
      bot_token: required('bot_token').refine(isBotToken, { error: platformTexts.configBotTokenInvalid }),
      // What setWebhook accepts as `secret_token`.
      secret_token: required('secret_token').regex(/^[\w-]{1,256}$/, {
        error: platformTexts.configSecretTokenInvalid,
      }),
      base_url: baseUrl.default('https://api.telegram.org'),
    }),
    {
      provider: 'bot',
      sendMessage: false,
      externalSend: true,
      receivesInbound: true,
      hasWindow: false,
      hasTemplates: false,
      accountId: (config) => config.bot_token.split(':')[0] ?? '',
    },
  ),
  // Instagram Messaging through the Graph API: the professional account's id, a token that may send
  // for it, and the Meta app whose webhooks (signed with its secret) carry the account's messages.
  photo: describe(
    z.object({
      base_url: baseUrl,
      ig_user_id: required('ig_user_id'),
      access_token: required('access_token'),
      app_secret: required('app_secret'),
      verify_token: required('verify_token'),
    }),
    {
      provider: 'photo',
      sendMessage: false,
      externalSend: false,
      panelReply: true,
      receivesInbound: true,
      hasWindow: true,
      hasTemplates: false,
      accountId: (config) => config.ig_user_id,
    },
  ),
  // Facebook Messenger through the Graph Send API: the Page, its Page access token, and the Meta app
  // whose webhooks (signed with its secret) carry the Page's messages.
  social: describe(
    z.object({
      base_url: baseUrl,
      page_id: required('page_id'),
      page_access_token: required('page_access_token'),
      app_secret: required('app_secret'),
      verify_token: required('verify_token'),
    }),
    {
      provider: 'social',
      sendMessage: false,
      externalSend: false,
      panelReply: true,
      receivesInbound: true,
      hasWindow: true,
      hasTemplates: false,
      accountId: (config) => config.page_id,
    },
  ),
  // Our own website widget: there is no provider to call, and the widget names the integration itself.
  livechat: describe(z.object({ name: required('name'), allowed_origins: allowedOrigins }), {
    provider: 'livechat',
    sendMessage: false,
    externalSend: true,
    receivesInbound: true,
    hasWindow: false,
    hasTemplates: false,
    accountId: (_config, integrationId) => integrationId,
  }),
  // Mercado Livre: the seller's OAuth tokens (they rotate; the connector keeps the newest pair) and the
  // application's credentials, which its notifications name and the token refresh needs.
  market: describe(
    z.object({
      base_url: baseUrl.default('https://api.mercadolibre.com'),
      seller_id: required('seller_id'),
      access_token: required('access_token'),
      refresh_token: required('refresh_token'),
      client_id: required('client_id'),
      client_secret: required('client_secret'),
    }),
    {
      provider: 'market',
      sendMessage: false,
      externalSend: false,
      panelReply: true,
      receivesInbound: true,
      hasWindow: false,
      hasTemplates: false,
      accountId: (config) => config.seller_id,
    },
  ),
};
