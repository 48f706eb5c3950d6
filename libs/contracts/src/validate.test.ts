import { describe, expect, it } from 'vitest';
import {
  CreateAgentBody,
  CreateIntegrationBody,
  CreateWebhookBody,
  CreateWorkspaceBody,
} from './admin-api.js';
import { externalSendRule, moveLeadRule, sendMessageRule, sendTemplateRule } from './public-api.js';
import { codePointLength, hasCharacters, isStorableString, validateBody } from './validate.js';

describe('isStorableString', () => {
  it('accepts any well-formed text without NUL, emoji and other pairs included', () => {
    for (const text of ['', 'olá', '😀 ok', 'tab\tnew\nline', '\uFFFD'])
      expect(isStorableString(text)).toBe(true);
  });

  it('refuses NUL and lone surrogates', () => {
    for (const text of ['a\u0000b', '\u0000', 'a\uD800', '\uDC00b', '😀'.slice(1)])
      expect(isStorableString(text)).toBe(false);
  });
});

describe('request schemas refuse text that cannot be stored', () => {
  const firstError = (result: { success: boolean; error?: { issues: Array<{ message: string }> } }) =>
    result.success ? undefined : result.error?.issues[0]?.message;

  it('in admin names, integration fields and webhook fields, with the field’s text', () => {
    expect(firstError(CreateWorkspaceBody.safeParse({ name: 'a\u0000' }))).toBe(
      'name não pode conter o caractere NUL',
    );
    expect(firstError(CreateAgentBody.safeParse({ name: 'a\uD800' }))).toBe(
      'name não pode conter o caractere NUL',
    );
    expect(
      firstError(CreateIntegrationBody.safeParse({ channel: 'alt-a', config: { 'k\u0000': 'v' } })),
    ).toBe('config deve ser um objeto de strings');
    expect(
      firstError(CreateWebhookBody.safeParse({ url: 'https://hooks.example.com/\u0000', events: ['*'] })),
    ).toBe('url deve ser uma URL http(s)');
    expect(CreateWorkspaceBody.safeParse({ name: '  Loja 😀 ' }).data?.name).toBe('Loja 😀');
  });

  it('in send-template headerMedia', () => {
    const body = { phone: '+5511999990000', templateName: 'boas_vindas', channel: 'chat-official' };
    const media = { type: 'document', link: 'https://files.example.com/a.pdf' };
    expect(
      validateBody(sendTemplateRule, { ...body, headerMedia: { ...media, filename: 'a\u0000.pdf' } }),
    ).toEqual({
      ok: false,
      error: 'headerMedia.filename deve ser string de até 240 caracteres',
    });
    expect(
      validateBody(sendTemplateRule, { ...body, headerMedia: { ...media, filename: 'x'.repeat(241) } }),
    ).toEqual({
      ok: false,
      error: 'headerMedia.filename deve ser string de até 240 caracteres',
    });
    expect(
      validateBody(sendTemplateRule, { ...body, headerMedia: { ...media, filename: 'relatório.pdf' } }).ok,
    ).toBe(true);
  });
});

describe('lengths in characters, as the error texts say', () => {
  const emoji = '😀'; // one character, two UTF-16 units
  const errorOf = (rule: Parameters<typeof validateBody>[0], body: unknown) => {
    const result = validateBody(rule, body);
    return result.ok ? undefined : result.error;
  };

  it('counts code points, a pair as one', () => {
    expect(codePointLength('')).toBe(0);
    expect(codePointLength('olá')).toBe(3);
    expect(codePointLength(emoji.repeat(3))).toBe(3);
    expect(codePointLength(`a${emoji}b${emoji}`)).toBe(4);
    for (const [text, min, max, within] of [
      ['', 0, 0, true],
      ['', 1, 5, false],
      [emoji.repeat(5), 1, 5, true],
      [emoji.repeat(6), 1, 5, false],
      [`${emoji}x`.repeat(3), 6, 6, true],
      [`${emoji}x`.repeat(3), 7, 9, false],
      ['x'.repeat(6), 1, 5, false],
    ] as const)
      expect(hasCharacters(text, min, max), `${text} in ${min}..${max}`).toBe(within);
  });

  it('external send: sender_name up to 120 characters, however many UTF-16 units they take', () => {
    const external = { conversation_id: '0b8d3d4e-54a1-4cf4-9a43-2b1f6f0d6d3a', text: 'olá' };
    expect(errorOf(externalSendRule, { ...external, sender_name: emoji.repeat(120) })).toBeUndefined();
    expect(errorOf(externalSendRule, { ...external, sender_name: 'x'.repeat(120) })).toBeUndefined();
    expect(errorOf(externalSendRule, { ...external, sender_name: emoji.repeat(121) })).toBe(
      'sender_name deve ser string de até 120 caracteres',
    );
    expect(errorOf(externalSendRule, { ...external, text: emoji.repeat(4096) })).toBeUndefined();
    expect(errorOf(externalSendRule, { ...external, text: emoji.repeat(4097) })).toBe(
      'text deve ser string de 1–4096 caracteres',
    );
  });

  it('send-message, send-template and leads: the other counted fields', () => {
    const message = { phone: '+5511999990000', message: 'olá', channel: 'alt-a' };
    expect(errorOf(sendMessageRule, { ...message, contactName: emoji.repeat(255) })).toBeUndefined();
    expect(errorOf(sendMessageRule, { ...message, contactName: emoji.repeat(256) })).toBe(
      'contactName deve ser string de até 255 caracteres',
    );
    const template = { phone: '+5511999990000', channel: 'chat-official', templateName: 'boas_vindas' };
    expect(errorOf(sendTemplateRule, { ...template, templateName: emoji.repeat(512) })).toBeUndefined();
    expect(errorOf(sendTemplateRule, { ...template, templateName: emoji.repeat(513) })).toBe(
      'templateName deve ser string de 1 a 512 caracteres',
    );
    expect(errorOf(sendTemplateRule, { ...template, variables: [emoji.repeat(1024)] })).toBeUndefined();
    const lead = { pipeline_id: '0b8d3d4e-54a1-4cf4-9a43-2b1f6f0d6d3a' };
    expect(errorOf(moveLeadRule, { ...lead, stage: emoji.repeat(200) })).toBeUndefined();
    expect(errorOf(moveLeadRule, { ...lead, stage: emoji.repeat(201) })).toBe(
      'stage deve ser string de 1 a 200 caracteres',
    );
  });

  it('admin names and stage keys', () => {
    expect(CreateWorkspaceBody.safeParse({ name: emoji.repeat(200) }).success).toBe(true);
    expect(CreateWorkspaceBody.safeParse({ name: emoji.repeat(201) }).error?.issues[0]?.message).toBe(
      'name deve ter até 200 caracteres',
    );
    expect(CreateWorkspaceBody.safeParse({ name: '   ' }).error?.issues[0]?.message).toBe(
      CreateWorkspaceBody.safeParse({}).error?.issues[0]?.message,
    );
    expect(
      CreateIntegrationBody.safeParse({ channel: 'alt-a', name: emoji.repeat(200), config: {} }).success,
    ).toBe(true);
  });
});
