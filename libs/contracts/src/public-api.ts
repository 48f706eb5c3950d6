import { z } from 'zod';
import { sendMessageChannels, templateChannels } from './channels.js';
import { documentedAs } from './documented-as.js';
import { errorTexts, platformTexts } from './error-texts.js';
import { cleanPhoneInput } from './phone-input.js';
import { type BodyRule, hasCharacters, isStorableString, storableText } from './validate.js';

const optionalUuid = (field: string) => z.uuid({ error: platformTexts.mustBeUuid(field) }).nullish();
// Text Postgres cannot store as sent (NUL, lone surrogates) is refused at the door with the field's own
// text, like every other way the field can be wrong.
const optionalText = (field: string, max: number) =>
  storableText(platformTexts.mustBeString(field, max), 0, max).nullish();

/** A message body: 1 to 4096 characters (code points), storable; one text for every way it can fail. */
const messageText = (error: string) => storableText(error, 1, 4096);

export const phoneField = z
  .string({ error: errorTexts.phoneInvalid })
  .refine((raw) => cleanPhoneInput(raw) !== undefined, { error: errorTexts.phoneInvalid });

/** What send-message and send-template both take beside the message itself. */
const sendOptions = {
  integrationId: optionalUuid('integrationId'),
  agentId: optionalUuid('agentId'),
  contactName: optionalText('contactName', 255),
};

export const SendMessageBody = z.object({
  channel: z.enum(sendMessageChannels, { error: errorTexts.sendMessageChannel(sendMessageChannels) }),
  phone: phoneField,
  message: messageText(errorTexts.messageLength),
  ...sendOptions,
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

export const ExternalSendBody = z.object({
  conversation_id: z.uuid({ error: platformTexts.mustBeUuid('conversation_id') }),
  text: messageText(platformTexts.textLength),
  sender_type: z.enum(['agent', 'system'], { error: errorTexts.senderTypeInvalid }).nullish(),
  sender_name: optionalText('sender_name', 120),
});
export type ExternalSendBody = z.infer<typeof ExternalSendBody>;

export const externalSendRule: BodyRule<typeof ExternalSendBody> = {
  required: ['conversation_id', 'text'],
  requiredText: errorTexts.externalSendRequired,
  schema: ExternalSendBody,
};

export const ExternalSendResponse = z.object({
  success: z.literal(true),
  message_id: z.uuid(),
  conversation_id: z.uuid(),
  workspace_id: z.uuid(),
  sent_at: z.iso.datetime(),
});

export const MoveLeadBody = z.object({
  pipeline_id: z.uuid({ error: platformTexts.mustBeUuid('pipeline_id') }),
  stage: storableText(platformTexts.stageInvalid, 1, 200),
  conversation_id: optionalUuid('conversation_id'),
});
export type MoveLeadBody = z.infer<typeof MoveLeadBody>;

export const moveLeadRule: BodyRule<typeof MoveLeadBody> = {
  required: ['pipeline_id', 'stage'],
  requiredText: platformTexts.leadsRequired,
  schema: MoveLeadBody,
};

export const MoveLeadResponse = z.object({
  success: z.literal(true),
  contact_id: z.uuid(),
  pipeline_id: z.uuid(),
  stage: z.string(),
});

const HeaderMedia = z
  .object(
    {
      type: z.enum(['image', 'video', 'document'], { error: platformTexts.headerMediaType }),
      // The URL parser would accept a NUL by percent-encoding it, but the link is stored as sent.
      link: z
        .url({ protocol: /^https?$/, error: platformTexts.headerMediaLink })
        .refine(isStorableString, { error: platformTexts.headerMediaLink }),
      filename: optionalText('headerMedia.filename', 240),
    },
    { error: platformTexts.headerMediaObject },
  )
  .refine((media) => media.filename == null || media.type === 'document', {
    error: platformTexts.headerMediaFilename,
  });

const ButtonEntry = z.object({
  index: z.number().int().min(0).describe("The button's position in the approved template, from 0."),
  type: z.enum(['url', 'quick_reply']),
  text: z
    .string()
    .min(1)
    .max(2000)
    .nullish()
    .describe("Required for a `url` button: replaces the variable part of the button's link."),
  payload: z
    .string()
    .min(1)
    .max(2000)
    .nullish()
    .describe('Required for a `quick_reply` button: returned when the contact clicks it.'),
});
export type TemplateButton = z.infer<typeof ButtonEntry>;

// Buttons are judged entry by entry so that the text can name the entry at fault.
const Buttons = z.unknown().transform((value, ctx): TemplateButton[] => {
  const fail = (error: string) => {
    ctx.addIssue({ code: 'custom', message: error });
    return z.NEVER;
  };
  if (!Array.isArray(value)) return fail(platformTexts.buttonsNotArray);
  const seen = new Set<number>();
  const buttons: TemplateButton[] = [];
  for (const [i, entry] of value.entries()) {
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry))
      return fail(platformTexts.buttonEntry(i));
    const { index, type, text, payload } = entry as Record<string, unknown>;
    if (typeof index !== 'number' || !Number.isInteger(index) || index < 0)
      return fail(platformTexts.buttonIndex(i));
    if (type !== 'url' && type !== 'quick_reply') return fail(platformTexts.buttonType(i));
    const nonEmpty = (v: unknown) =>
      typeof v === 'string' && v.length > 0 && v.length <= 2000 && isStorableString(v);
    if (type === 'url' && !nonEmpty(text)) return fail(platformTexts.buttonText(i));
    if (type === 'quick_reply' && !nonEmpty(payload)) return fail(platformTexts.buttonPayload(i));
    if (seen.has(index)) return fail(platformTexts.buttonIndexRepeated(index));
    seen.add(index);
    buttons.push(
      ButtonEntry.parse({
        index,
        type,
        text: type === 'url' ? text : null,
        payload: type === 'quick_reply' ? payload : null,
      }),
    );
  }
  return buttons;
});

const maxVariables = 100;
const maxVariableLength = 1_024;
/**
 * How long a template's body may be once its variables are in: the text stored as the message and carried
 * by its `message.sent`, which must fit an event (256 KiB) however its characters are escaped. A body of
 * a catalogue the tenant's own provider lists may repeat a placeholder any number of times.
 */
export const maxRenderedTemplateChars = 32_768;

export const SendTemplateBody = z.object({
  channel: z.enum(templateChannels, { error: platformTexts.templateChannel(templateChannels) }),
  phone: phoneField,
  templateName: storableText(platformTexts.templateName, 1, 512),
  language: z
    .string({ error: platformTexts.templateLanguage })
    .regex(/^[a-z]{2,3}(_[A-Z]{2})?$/, { error: platformTexts.templateLanguage })
    .nullish()
    .transform((language) => language ?? 'pt_BR'),
  variables: documentedAs(
    z
      .array(z.unknown(), { error: errorTexts.variablesNotArray })
      .refine(
        (items) =>
          items.every(
            (item) =>
              (typeof item === 'string' && isStorableString(item)) ||
              (typeof item === 'number' && Number.isFinite(item)),
          ),
        {
          error: platformTexts.variablesItems,
        },
      )
      // Far above what a template holds (its whole body is at most 1,024 characters): a bound, not a rule.
      .refine(
        (items) =>
          items.length <= maxVariables &&
          items.every((item) => typeof item !== 'string' || hasCharacters(item, 0, maxVariableLength)),
        { error: platformTexts.variablesTooMany(maxVariables, maxVariableLength) },
      )
      .transform((items) => items as Array<string | number>)
      .nullish(),
    z
      .array(z.union([z.string().max(maxVariableLength), z.number()]))
      .max(maxVariables)
      .nullish()
      .describe('Replace {{1}}, {{2}}, … of the template body, in order: as many as it has placeholders.'),
  ),
  headerMedia: HeaderMedia.nullish(),
  buttons: documentedAs(
    Buttons.nullish(),
    z
      .array(ButtonEntry)
      .nullish()
      .describe('Only for buttons with a dynamic part; an index appears at most once.'),
  ),
  ...sendOptions,
});
export type SendTemplateBody = z.infer<typeof SendTemplateBody>;

export const sendTemplateRule: BodyRule<typeof SendTemplateBody> = {
  required: ['phone', 'templateName', 'channel'],
  requiredText: errorTexts.sendTemplateRequired,
  schema: SendTemplateBody,
};

export const SendTemplateResponse = SendMessageResponse.extend({
  template: z.object({
    name: z.string(),
    language: z.string(),
    variables: z.array(z.union([z.string(), z.number()])),
    headerMedia: z.object({ type: z.string(), link: z.string(), filename: z.string().optional() }).nullable(),
    buttons: z
      .array(
        z.object({
          index: z.number().int(),
          type: z.enum(['url', 'quick_reply']),
          text: z.string().optional().describe('For a `url` button.'),
          payload: z.string().optional().describe('For a `quick_reply` button.'),
        }),
      )
      .nullable(),
  }),
});
