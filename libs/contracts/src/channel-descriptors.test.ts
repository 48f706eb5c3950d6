import { afterEach, describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { addFakeChannel, fakeChannel, fakeProvider, removeFakeChannel } from '../test/fake-channel.js';
import { CreateIntegrationBody } from './admin-api.js';
import {
  descriptorOf,
  externalSendChannels,
  type IntegrationChannel,
  inboundChannels,
  integrationChannels,
  providerOf,
  providers,
  replyRules,
  sendMessageChannels,
  templateChannels,
  windowChannels,
} from './channels.js';
import { errorTexts, platformTexts } from './error-texts.js';
import { SendTemplateBody } from './public-api.js';

describe('the channel descriptor table', () => {
  it('gives the spec’s channel lists and provider values', () => {
    expect(integrationChannels).toEqual([
      'chat-official',
      'alt-a',
      'alt-b',
      'bot',
      'photo',
      'social',
      'livechat',
      'market',
    ]);
    expect(sendMessageChannels).toEqual(['chat-official', 'alt-a', 'alt-b']);
    expect(externalSendChannels).toEqual(['chat-official', 'alt-a', 'alt-b', 'bot', 'livechat']);
    expect(inboundChannels).toEqual(integrationChannels);
    expect(windowChannels).toEqual(['chat-official', 'photo', 'social']);
    expect(templateChannels).toEqual(['chat-official']);
    expect(providers).toEqual(['chat-official', 'chat', 'bot', 'photo', 'social', 'livechat', 'market']);
    expect(providerOf('alt-a')).toBe('chat');
    expect(providerOf('alt-b')).toBe('chat');
    expect(providerOf('livechat')).toBe('livechat');
    // External send reaches a conversation by its provider value: both chat providers, not the marketplace.
    expect(providers.filter((provider) => replyRules(provider)?.externalSend)).toEqual([
      'chat-official',
      'chat',
      'bot',
      'livechat',
    ]);
  });

  it('says what a reply may do per provider value: external send, the panel, a window nothing reopens', () => {
    expect(replyRules('chat-official')).toEqual({
      externalSend: true,
      panelReply: true,
      windowWithoutTemplates: false,
    });
    expect(replyRules('chat')).toEqual({
      externalSend: true,
      panelReply: true,
      windowWithoutTemplates: false,
    });
    for (const provider of ['social', 'photo'])
      expect(replyRules(provider)).toEqual({
        externalSend: false,
        panelReply: true,
        windowWithoutTemplates: true,
      });
    // Mercado Livre's answers and post-sale messages have no window the platform checks.
    expect(replyRules('market')).toEqual({
      externalSend: false,
      panelReply: true,
      windowWithoutTemplates: false,
    });
    expect(replyRules('nobody')).toBeUndefined();
  });

  it('writes the channel texts byte for byte from the lists', () => {
    expect(errorTexts.sendMessageChannel(sendMessageChannels)).toBe(
      'channel inválido. Use "chat-official", "alt-a" ou "alt-b"',
    );
    expect(platformTexts.templateChannel(templateChannels)).toBe(
      'channel inválido. Templates (HSM) só são suportados pelo canal "chat-official"',
    );
    expect(CreateIntegrationBody.safeParse({ channel: 'nope', config: {} }).error?.issues[0]?.message).toBe(
      'channel deve ser um de: chat-official, alt-a, alt-b, bot, photo, social, livechat, market',
    );
    expect(SendTemplateBody.shape.channel.safeParse('alt-a').error?.issues[0]?.message).toBe(
      'channel inválido. Templates (HSM) só são suportados pelo canal "chat-official"',
    );
  });

  it('bounds a config: keys, each value, and the origins a live chat lists', () => {
    const tooLarge = 'config aceita até 32 chaves, cada valor com até 8192 caracteres';
    const firstText = (config: Record<string, string>) =>
      CreateIntegrationBody.safeParse({ channel: 'alt-a', config }).error?.issues[0]?.message;
    expect(firstText({ api_key: 'k'.repeat(8_192) })).toBeUndefined();
    expect(firstText({ api_key: 'k'.repeat(8_193) })).toBe(tooLarge);
    expect(firstText(Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`k${i}`, 'v'])))).toBe(
      tooLarge,
    );
    const origins = (n: number) => Array.from({ length: n }, (_, i) => `https://shop${i}.example`).join(',');
    const livechat = descriptorOf('livechat').config;
    expect(livechat.safeParse({ name: 'n', allowed_origins: origins(100) }).success).toBe(true);
    expect(livechat.safeParse({ name: 'n', allowed_origins: origins(101) }).error?.issues[0]?.message).toBe(
      'config.allowed_origins lista no máximo 100 origens',
    );
  });

  it('checks each channel’s config with its texts and names its provider-side account', () => {
    const official = descriptorOf('chat-official');
    const config = {
      base_url: 'https://graph.example',
      phone_number_id: 'p1',
      waba_id: 'w1',
      access_token: 't',
      app_secret: 's',
      verify_token: 'v',
    };
    const parsed = official.config.parse(config);
    expect(parsed.api_version).toBe('v21.0');
    expect(official.accountId(parsed, 'id')).toBe('p1');
    const firstError = (channel: IntegrationChannel, value: unknown) =>
      descriptorOf(channel).config.safeParse(value).error?.issues[0]?.message;
    expect(firstError('chat-official', { ...config, waba_id: '' })).toBe('config.waba_id é obrigatório');
    expect(firstError('chat-official', { ...config, base_url: 'ftp://x' })).toBe(
      'config.base_url deve ser uma URL http(s)',
    );
    expect(firstError('chat-official', { ...config, api_version: '21' })).toBe(
      'config.api_version deve ser como v21.0',
    );
    expect(firstError('alt-a', { base_url: 'http://a' })).toBe('config.instance é obrigatório');
    expect(firstError('alt-b', { base_url: 'http://b' })).toBeUndefined();
    expect(descriptorOf('livechat').accountId({ name: 'n', allowed_origins: '*' }, 'integration-id')).toBe(
      'integration-id',
    );
  });
});

describe('callback secrets the connector generates', () => {
  it('are kept by the config schema of every channel that asks for one', () => {
    const withSecret = integrationChannels.filter((channel) => descriptorOf(channel).callbackSecret);
    expect(withSecret).toEqual(expect.arrayContaining(['alt-a', 'alt-b']));
    for (const channel of withSecret) {
      const schema = descriptorOf(channel).config as unknown as z.ZodObject;
      expect(Object.keys(schema.shape)).toContain('callback_secret');
    }
    const parsed = descriptorOf('alt-b').config.parse({
      base_url: 'https://api.z-api.io',
      callback_secret: 's',
    });
    expect(parsed.callback_secret).toBe('s');
  });
});

describe('a channel added to the table', () => {
  afterEach(removeFakeChannel);

  it('appears in validation, its texts and the provider values with no other edit', async () => {
    addFakeChannel();
    const contracts = await import('./index.js');
    expect(contracts.integrationChannels).toContain(fakeChannel);
    expect(contracts.sendMessageChannels).toEqual(['chat-official', 'alt-a', 'alt-b', fakeChannel]);
    expect(contracts.providers).toContain(fakeProvider);

    const message = { phone: '+5511999990000', message: 'olá', channel: fakeChannel };
    expect(contracts.validateBody(contracts.sendMessageRule, message).ok).toBe(true);
    expect(contracts.validateBody(contracts.sendMessageRule, { ...message, channel: 'nope' })).toEqual({
      ok: false,
      error: `channel inválido. Use "chat-official", "alt-a", "alt-b" ou "${fakeChannel}"`,
    });

    const integration = { channel: fakeChannel, config: { base_url: 'http://fake' } };
    expect(contracts.CreateIntegrationBody.safeParse(integration).success).toBe(true);
    expect(
      contracts.CreateIntegrationBody.safeParse({ ...integration, channel: 'nope' }).error?.issues[0]
        ?.message,
    ).toBe(
      `channel deve ser um de: chat-official, alt-a, alt-b, bot, photo, social, livechat, market, ${fakeChannel}`,
    );

    // The generated document's enums follow the same table.
    const document = contracts.openApiDocument() as unknown as {
      components: { schemas: Record<string, { properties: Record<string, { enum?: string[] }> }> };
    };
    const { schemas } = document.components;
    expect(schemas.SendMessageBody!.properties.channel!.enum).toContain(fakeChannel);
    expect(JSON.stringify(schemas)).toContain(`"${fakeProvider}"`);
  });
});
