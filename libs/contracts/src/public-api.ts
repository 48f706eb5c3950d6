import { z } from 'zod';
import { sendMessageChannels } from './channels.js';
import { errorTexts, platformTexts } from './error-texts.js';
import { cleanPhoneInput } from './phone-input.js';
import type { BodyRule } from './validate.js';

const optionalUuid = (field: string) => z.uuid({ error: platformTexts.mustBeUuid(field) }).nullish();
const optionalText = (field: string, max: number) =>
  z
    .string({ error: platformTexts.mustBeString(field, max) })
    .max(max, { error: platformTexts.mustBeString(field, max) })
    .nullish();

const codePointLength = (text: string) => [...text].length;

export const phoneField = z
  .string({ error: errorTexts.phoneInvalid })
  .refine((raw) => cleanPhoneInput(raw) !== undefined, { error: errorTexts.phoneInvalid });

export const SendMessageBody = z.object({
  channel: z.enum(sendMessageChannels, { error: errorTexts.sendMessageChannel }),
  phone: phoneField,
  message: z
    .string({ error: errorTexts.messageLength })
    .refine((text) => codePointLength(text) >= 1 && codePointLength(text) <= 4096, {
      error: errorTexts.messageLength,
    }),
  integrationId: optionalUuid('integrationId'),
  agentId: optionalUuid('agentId'),
  contactName: optionalText('contactName', 255),
});
export type SendMessageBody = z.infer<typeof SendMessageBody>;

export const sendMessageRule: BodyRule<typeof SendMessageBody> = {
  required: ['phone', 'message', 'channel'],
  requiredText: errorTexts.sendMessageRequired,
  schema: SendMessageBody,
};

export const SendMessageResponse = z.object({
  success: z.literal(true),
  conversationId: z.uuid(),
  contactId: z.uuid(),
  messageId: z.uuid(),
  waMessageId: z.string(),
  contactCreated: z.boolean(),
  conversationCreated: z.boolean(),
  sent_at: z.iso.datetime(),
});
export type SendMessageResponse = z.infer<typeof SendMessageResponse>;
