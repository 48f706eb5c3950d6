import type { Request, Response } from 'express';
import { z } from 'zod';
import type { SandboxStores } from './channel-emulator.js';
import { CHAT_OFFICIAL, type ChatOfficialState, newWamid } from './chat-official-state.js';
import { checkTemplateSend, type MediaHeader, mediaHeaderOf } from './chat-official-template-checks.js';
import type { StatusErrorCode } from './chat-official-webhooks.js';
import { answerFault, FaultMode, holdAnswer } from './faults.js';
import { invalidParameter, somethingWentWrong, throttled } from './graph-error.js';
import { toDigits } from './phone-digits.js';
import { whatsappNumber } from './whatsapp-number.js';

/** Free text is only allowed this long after the customer's last message. */
const CUSTOMER_SERVICE_WINDOW_MS = 24 * 60 * 60 * 1000;

/** Why an accepted message fails later, or undefined when it is delivered. */
export type LateVerdict = { errorCode: StatusErrorCode; reason?: string } | undefined;

/**
 * What happens to a message after Meta answered it with a wamid: a failure Meta only finds out then comes
 * as a `failed` status notification, not as the send's answer.
 */
export type AfterAccept = (
  account: string,
  message: { wamid: string; to: string; callbackData?: string; userId?: string },
  verdict: () => Promise<LateVerdict>,
) => void;

const envelope = z.object(
  {
    messaging_product: z.literal('whatsapp', { error: 'messaging_product must be "whatsapp"' }),
    recipient_type: z.literal('individual', { error: 'recipient_type must be "individual"' }).optional(),
    to: z
      .string({ error: 'to must be a string' })
      .refine((to) => toDigits(to).length > 0, 'to must contain digits')
      .optional(),
    // A user's business-scoped user id, for a user known by no number; `to` wins when both are given.
    recipient: z
      .string({ error: 'recipient must be a string' })
      .min(1, 'recipient must not be empty')
      .optional(),
    // Meta takes a message without a type as text.
    type: z.enum(['text', 'template'], { error: 'type must be text or template' }).default('text'),
    // "An arbitrary string, useful for tracking", echoed in the message's status webhooks; at most 512
    // characters.
    biz_opaque_callback_data: z
      .string({ error: 'biz_opaque_callback_data must be a string' })
      .max(512, 'biz_opaque_callback_data must be at most 512 characters')
      .optional(),
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

export interface SendDeps {
  stores: SandboxStores;
  state: ChatOfficialState;
  afterAccept: AfterAccept;
  /** How the sandbox downloads a header's media, as Meta does. */
  fetchImpl: typeof fetch;
}

/**
 * `POST /:version/:phoneNumberId/messages`; credentials were checked before. As with Meta, a message is
 * accepted (a wamid) when its form is right; that free text reaches no one outside the customer service
 * window, or that a header's media cannot be fetched, is only told later by a `failed` status.
 */
export function sendMessage({ stores, state, afterAccept, fetchImpl }: SendDeps) {
  return (req: Request<{ phoneNumberId: string }>, res: Response): void => {
    const account = req.params.phoneNumberId;
    const fault = stores.faults.find(CHAT_OFFICIAL, account);
    const errorBody = (status: number) => somethingWentWrong(status).toBody();
    if (fault && fault.mode !== FaultMode.lostAnswer) {
      answerFault(fault, res, errorBody, stores.faultHoldMs);
      return;
    }
    const { to, recipient: userId, type, biz_opaque_callback_data: callbackData } = parse(envelope, req.body);
    const addressee = addresseeOf(state, account, to, userId);
    const recipient = addressee.number;
    const throttle = takeThrottle(state, account, recipient);
    if (throttle) throw throttled(throttle);
    const now = new Date();
    let verdict: () => Promise<LateVerdict>;
    if (type === 'text') {
      parse(textPart, req.body);
      const open = windowIsOpen(stores, account, recipient, now);
      verdict = async () => (open ? undefined : { errorCode: 131047 });
    } else {
      const { template } = parse(templatePart, req.body);
      checkTemplateSend(state.templates, account, template);
      const media = mediaHeaderOf(state.templates, account, template);
      verdict = async () => (media ? fetchMedia(fetchImpl, media) : undefined);
    }
    // A number with no WhatsApp account is found only when WhatsApp tries to deliver: 131026.
    if (stores.withoutWhatsApp.has(recipient)) verdict = async () => ({ errorCode: 131026 });

    const id = newWamid();
    const issued = {
      account,
      to: recipient,
      ...(callbackData === undefined ? {} : { callbackData }),
      ...('userId' in addressee ? { userId: addressee.userId } : {}),
    };
    state.issued.set(id, issued);
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
    // Sent all the same: only the answer is lost on its way back.
    if (fault?.mode === FaultMode.lostAnswer) holdAnswer(res, errorBody, stores.faultHoldMs);
    else
      res.json({
        messaging_product: 'whatsapp',
        contacts: [addressee.contact],
        messages: [type === 'template' ? { id, message_status: 'accepted' } : { id }],
      });
    afterAccept(account, { wamid: id, to: recipient, callbackData, userId: issued.userId }, verdict);
  };
}

/**
 * Who a send goes to: the number in `to`, or the user behind a BSUID this business gave out. Meta answers
 * with the number (`wa_id`) for a number and the BSUID (`user_id`) for a BSUID.
 */
function addresseeOf(
  state: ChatOfficialState,
  account: string,
  to: string | undefined,
  userId: string | undefined,
) {
  if (to !== undefined) {
    // Meta answers with the user's WhatsApp id, which for many Brazilian mobiles lacks the ninth digit.
    const number = whatsappNumber(toDigits(to));
    return { number, contact: { input: to, wa_id: number } };
  }
  if (userId === undefined) throw invalidParameter('to is required');
  const number = state.userIds.numberOf(state.templates.wabaIdOf(account), userId);
  if (number === undefined) throw invalidParameter(`recipient ${userId} is not a user of this business`);
  return { number: whatsappNumber(number), userId, contact: { input: userId, user_id: userId } };
}

/** The window is the WhatsApp user's (the sandbox's windows know them by `whatsappNumber`). */
function windowIsOpen(stores: SandboxStores, account: string, recipient: string, now: Date): boolean {
  const lastInbound = stores.windows.lastInbound(CHAT_OFFICIAL, account, recipient);
  return lastInbound !== undefined && now.getTime() - lastInbound.getTime() <= CUSTOMER_SERVICE_WINDOW_MS;
}

/** The first throttle that applies to this send, counted down; gone once spent. */
function takeThrottle(state: ChatOfficialState, account: string, recipient: string) {
  const throttles = state.throttles.get(account) ?? [];
  const index = throttles.findIndex((throttle) => throttle.to === undefined || throttle.to === recipient);
  const throttle = throttles[index];
  if (!throttle) return undefined;
  throttle.remaining -= 1;
  if (throttle.remaining <= 0) throttles.splice(index, 1);
  return throttle.code;
}

/** How long Meta's download of a header's media may take before the sandbox calls it failed. */
const MEDIA_FETCH_TIMEOUT_MS = 5_000;

/** Meta downloads a header's media when it sends the template; the sandbox does too. */
async function fetchMedia(fetchImpl: typeof fetch, media: MediaHeader): Promise<LateVerdict> {
  const failed = (reason: string): LateVerdict => ({
    errorCode: 131053,
    reason: `Downloading ${media.link} failed: ${reason}.`,
  });
  let response: globalThis.Response;
  try {
    response = await fetchImpl(media.link, { signal: AbortSignal.timeout(MEDIA_FETCH_TIMEOUT_MS) });
  } catch (error) {
    return failed(error instanceof Error ? error.message : String(error));
  }
  await response.body?.cancel();
  if (!response.ok) return failed(`HTTP ${response.status}`);
  const contentType = response.headers.get('content-type') ?? '';
  if (media.kind !== 'document' && !contentType.startsWith(`${media.kind}/`)) {
    return failed(`content type ${contentType || 'missing'} is not ${media.kind}`);
  }
  return undefined;
}

function parse<T>(schema: z.ZodType<T>, input: unknown): T {
  const parsed = schema.safeParse(input);
  if (parsed.success) return parsed.data;
  throw invalidParameter(parsed.error.issues.map((issue) => issue.message).join('; '));
}
