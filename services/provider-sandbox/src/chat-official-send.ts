import type { Request, Response } from 'express';
import { z } from 'zod';
import type { SandboxStores } from './channel-emulator.js';
import { CHAT_OFFICIAL, type ChatOfficialState, newWamid } from './chat-official-state.js';
import { checkTemplateSend } from './chat-official-template-checks.js';
import { answerFault } from './faults.js';
import { GraphCode, GraphError, invalidParameter, somethingWentWrong } from './graph-error.js';
import { toDigits } from './phone-digits.js';

/** Free text is only allowed this long after the customer's last message. */
const CUSTOMER_SERVICE_WINDOW_MS = 24 * 60 * 60 * 1000;

const envelope = z.object(
  {
    messaging_product: z.literal('whatsapp', { error: 'messaging_product must be "whatsapp"' }),
    recipient_type: z.literal('individual', { error: 'recipient_type must be "individual"' }).optional(),
    to: z
      .string({ error: (issue) => (issue.input === undefined ? 'to is required' : 'to must be a string') })
      .refine((to) => toDigits(to).length > 0, 'to must contain digits'),
    // Meta takes a message without a type as text.
    type: z.enum(['text', 'template'], { error: 'type must be text or template' }).default('text'),
  },
  { error: 'body must be a JSON object' },
);

const textPart = z.object({
  text: z.object(
    {
      body: z
        .string({
          error: (issue) =>
            issue.input === undefined ? 'text.body is required' : 'text.body must be a string',
        })
        .min(1, 'text.body must not be empty'),
      preview_url: z.boolean({ error: 'text.preview_url must be a boolean' }).optional(),
    },
    { error: 'text is required for a text message' },
  ),
});

const lowerCase = (value: unknown) => (typeof value === 'string' ? value.toLowerCase() : value);

const templatePart = z.object({
  template: z.object(
    {
      name: z.string({ error: 'template.name is required' }).min(1, 'template.name must not be empty'),
      language: z.object(
        { code: z.string({ error: 'template.language.code is required' }).min(1) },
        { error: 'template.language is required' },
      ),
      components: z
        .array(
          z.object({
            type: z.preprocess(
              lowerCase,
              z.enum(['header', 'body', 'button'], {
                error: 'component type must be header, body or button',
              }),
            ),
            sub_type: z.string().optional(),
            index: z.union([z.string(), z.number()]).optional(),
            parameters: z
              .array(z.looseObject({ type: z.string({ error: 'each parameter needs a type' }) }), {
                error: 'component parameters must be an array',
              })
              .default([]),
          }),
          { error: 'template.components must be an array' },
        )
        .default([]),
    },
    { error: 'template is required for a template message' },
  ),
});

/** `POST /:version/:phoneNumberId/messages`; credentials were checked before. */
export function sendMessage(stores: SandboxStores, state: ChatOfficialState) {
  return (req: Request<{ phoneNumberId: string }>, res: Response): void => {
    const account = req.params.phoneNumberId;
    const fault = stores.faults.find(CHAT_OFFICIAL, account);
    if (fault) {
      answerFault(fault, res, (status) => somethingWentWrong(status).toBody(), stores.faultHoldMs);
      return;
    }
    const { to, type } = parse(envelope, req.body);
    const recipient = toDigits(to);
    const now = new Date();
    if (type === 'text') {
      parse(textPart, req.body);
      requireOpenWindow(stores, account, recipient, now);
    } else {
      checkTemplateSend(state.templates, account, parse(templatePart, req.body).template);
    }

    const id = newWamid();
    state.issued.set(id, { account, to: recipient });
    stores.sent.record({
      channel: CHAT_OFFICIAL,
      account,
      to: recipient,
      method: req.method,
      path: `${req.baseUrl}${req.path}`,
      body: req.body,
      provider_message_id: id,
      received_at: now.toISOString(),
    });
    res.json({
      messaging_product: 'whatsapp',
      contacts: [{ input: to, wa_id: recipient }],
      messages: [type === 'template' ? { id, message_status: 'accepted' } : { id }],
    });
  };
}

function requireOpenWindow(stores: SandboxStores, account: string, recipient: string, now: Date): void {
  const lastInbound = stores.windows.lastInbound(CHAT_OFFICIAL, account, recipient);
  if (lastInbound && now.getTime() - lastInbound.getTime() <= CUSTOMER_SERVICE_WINDOW_MS) return;
  throw new GraphError(
    400,
    GraphCode.reEngagementMessage,
    'Re-engagement message',
    'Message failed to send because more than 24 hours have passed since the customer last replied to this number.',
  );
}

function parse<T>(schema: z.ZodType<T>, input: unknown): T {
  const parsed = schema.safeParse(input);
  if (parsed.success) return parsed.data;
  throw invalidParameter(parsed.error.issues.map((issue) => issue.message).join('; '));
}
