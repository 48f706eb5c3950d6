import { describe, expect, it } from 'vitest';
import { sendMessageRule } from './public-api.js';
import { validateBody } from './validate.js';

const valid = { phone: '+5511999990000', message: 'olá', channel: 'alt-a' };
const errorOf = (body: unknown) => {
  const result = validateBody(sendMessageRule, body);
  return result.ok ? undefined : result.error;
};

describe('send-message body', () => {
  it('accepts the spec formats and keeps optional fields', () => {
    expect(validateBody(sendMessageRule, valid)).toEqual({ ok: true, value: valid });
    // At least 10 digits: ten is enough.
    for (const phone of [
      '5511999990000',
      '1199999000',
      '(11) 99999-0000',
      '11.99999.0000',
      '+1 202 555 0123',
    ]) {
      expect(errorOf({ ...valid, phone })).toBeUndefined();
    }
    expect(errorOf({ ...valid, message: 'x'.repeat(4096) })).toBeUndefined();
    expect(errorOf({ ...valid, message: '😀'.repeat(4096) })).toBeUndefined();
  });

  it.each([
    [{}, 'Parâmetros obrigatórios: phone, message, channel'],
    [null, 'Parâmetros obrigatórios: phone, message, channel'],
    [[], 'Parâmetros obrigatórios: phone, message, channel'],
    [{ ...valid, phone: undefined }, 'Parâmetros obrigatórios: phone, message, channel'],
    [{ ...valid, message: '' }, 'Parâmetros obrigatórios: phone, message, channel'],
    [{ ...valid, channel: null }, 'Parâmetros obrigatórios: phone, message, channel'],
    [{ ...valid, channel: 'bot' }, 'channel inválido. Use "chat-official", "alt-a" ou "alt-b"'],
    [{ ...valid, channel: 7 }, 'channel inválido. Use "chat-official", "alt-a" ou "alt-b"'],
    [{ ...valid, phone: '123456789' }, 'phone inválido. Forneça em E.164 ou só dígitos (mínimo 10).'],
    [{ ...valid, phone: '+55abc99990000' }, 'phone inválido. Forneça em E.164 ou só dígitos (mínimo 10).'],
    [{ ...valid, phone: 5511999990000 }, 'phone inválido. Forneça em E.164 ou só dígitos (mínimo 10).'],
    [{ ...valid, message: 'x'.repeat(4097) }, 'message deve ser string de 1–4096 caracteres'],
    [{ ...valid, message: 42 }, 'message deve ser string de 1–4096 caracteres'],
    [{ ...valid, integrationId: 'not-a-uuid' }, 'integrationId deve ser um UUID'],
    [{ ...valid, agentId: 12 }, 'agentId deve ser um UUID'],
    [{ ...valid, contactName: 'x'.repeat(256) }, 'contactName deve ser string de até 255 caracteres'],
    [{ ...valid, message: 'a\u0000b' }, 'message deve ser string de 1–4096 caracteres'],
    [{ ...valid, contactName: 'Ma\u0000ria' }, 'contactName deve ser string de até 255 caracteres'],
  ])('%j is refused with the exact text', (body, text) => {
    expect(errorOf(body)).toBe(text);
  });
});
