import { describe, expect, it } from 'vitest';
import {
  CreateAgentBody,
  CreateIntegrationBody,
  CreateWebhookBody,
  CreateWorkspaceBody,
} from './admin-api.js';
import { sendTemplateRule } from './public-api.js';
import { isStorableString, validateBody } from './validate.js';

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
