import { randomBytes } from 'node:crypto';
import { type Request, type Response, Router } from 'express';
import { z } from 'zod';
import { invalidParameter } from './graph-error.js';
import { parseControl } from './parse-control.js';

export const TEMPLATE_STATUSES = ['APPROVED', 'PENDING', 'REJECTED'] as const;
export type TemplateStatus = (typeof TEMPLATE_STATUSES)[number];

export const HEADER_FORMATS = ['IMAGE', 'VIDEO', 'DOCUMENT', 'TEXT'] as const;
export type HeaderFormat = (typeof HEADER_FORMATS)[number];
/** Header formats whose send must carry a media parameter of the same kind. */
export type MediaHeaderFormat = Exclude<HeaderFormat, 'TEXT'>;

export function isMediaFormat(format: HeaderFormat): format is MediaHeaderFormat {
  return format !== 'TEXT';
}

export type TemplateButton =
  | { type: 'URL'; text: string; url: string }
  | { type: 'QUICK_REPLY'; text: string };

export interface RegisteredTemplate {
  id: string;
  /** The phone number id whose sends may use the template. */
  account: string;
  wabaId: string;
  name: string;
  language: string;
  body: string;
  header?: { format: HeaderFormat; text?: string; example?: unknown };
  buttons: TemplateButton[];
  status: TemplateStatus;
}

const DEFAULT_PAGE_SIZE = 25;

/** Meta spells these in capitals; lower case is accepted so a test setup does not fail on spelling. */
const upperCase = (value: unknown) => (typeof value === 'string' ? value.toUpperCase() : value);

const nonEmpty = (field: string) =>
  z.string({ error: `${field} must be a string` }).min(1, `${field} must not be empty`);

const templateRegistration = z.object(
  {
    account: nonEmpty('account'),
    waba_id: nonEmpty('waba_id').optional(),
    name: nonEmpty('name'),
    language: nonEmpty('language'),
    body: nonEmpty('body'),
    header: z
      .object({
        format: z.preprocess(
          upperCase,
          z.enum(HEADER_FORMATS, { error: `header.format must be one of ${HEADER_FORMATS.join(', ')}` }),
        ),
        text: z.string({ error: 'header.text must be a string' }).optional(),
        example: z.unknown().optional(),
      })
      .optional(),
    buttons: z
      .array(
        z.union(
          [
            z.object({
              type: z.preprocess(upperCase, z.literal('URL')),
              text: nonEmpty('button text'),
              url: nonEmpty('button url'),
            }),
            z.object({
              type: z.preprocess(upperCase, z.literal('QUICK_REPLY')),
              text: nonEmpty('button text'),
            }),
          ],
          { error: 'each button must be { type: "URL", text, url } or { type: "QUICK_REPLY", text }' },
        ),
      )
      .default([]),
    status: z
      .preprocess(
        upperCase,
        z.enum(TEMPLATE_STATUSES, { error: `status must be one of ${TEMPLATE_STATUSES.join(', ')}` }),
      )
      .default('APPROVED'),
  },
  { error: 'body must be a JSON object' },
);

/**
 * The templates "approved by Meta" for each phone number. Sends check against the phone number's own
 * templates; the list endpoint shows them by WhatsApp Business Account, as Meta does.
 */
export class TemplateRegistry {
  readonly #byKey = new Map<string, RegisteredTemplate>();
  readonly #wabaByAccount = new Map<string, string>();

  /** Registering the same name and language again replaces the template, keeping its id and place. */
  register(template: Omit<RegisteredTemplate, 'id'>): RegisteredTemplate {
    const key = templateKey(template.account, template.name, template.language);
    const registered = { ...template, id: this.#byKey.get(key)?.id ?? templateId() };
    this.#byKey.set(key, registered);
    this.#wabaByAccount.set(template.account, template.wabaId);
    return registered;
  }

  find(account: string, name: string, language: string): RegisteredTemplate | undefined {
    return this.#byKey.get(templateKey(account, name, language));
  }

  /** In registration order, so paging is stable. */
  listByWaba(wabaId: string): RegisteredTemplate[] {
    return [...this.#byKey.values()].filter((template) => template.wabaId === wabaId);
  }

  /** The account's business account as last registered, else the default the sandbox makes up for it. */
  wabaIdOf(account: string): string {
    return this.#wabaByAccount.get(account) ?? defaultWabaId(account);
  }

  clear(): void {
    this.#byKey.clear();
    this.#wabaByAccount.clear();
  }
}

/** `POST /_sandbox/templates`: registers a template as if Meta had reviewed it. */
export function templateControls(registry: TemplateRegistry): Router {
  const router = Router();
  router.post('/templates', (req, res) => {
    const input = parseControl(templateRegistration, req.body);
    const registered = registry.register({
      account: input.account,
      wabaId: input.waba_id ?? defaultWabaId(input.account),
      name: input.name,
      language: input.language,
      body: input.body,
      ...(input.header ? { header: input.header } : {}),
      buttons: input.buttons,
      status: input.status,
    });
    res.status(201).json({ ok: true, id: registered.id, waba_id: registered.wabaId });
  });
  return router;
}

/** `GET /:version/:wabaId/message_templates`, paged with opaque cursors like the Graph API. */
export function listTemplates(registry: TemplateRegistry) {
  return (req: Request<{ wabaId: string }>, res: Response): void => {
    const limit = pageSize(req.query.limit);
    const templates = registry.listByWaba(req.params.wabaId);
    const start = startAfter(templates, req.query.after);
    const page = templates.slice(start, start + limit);
    const first = page[0];
    const last = page.at(-1);
    const cursors = {
      // An empty page has no items to point at; empty cursors keep the shape a client parses the same.
      before: first ? cursorOf(first) : '',
      after: last ? cursorOf(last) : '',
    };
    const more = last !== undefined && start + limit < templates.length;
    res.json({
      data: page.map(toGraph),
      paging: { cursors, ...(more ? { next: nextPageUrl(req, limit, cursors.after) } : {}) },
    });
  };
}

function toGraph(template: RegisteredTemplate) {
  const components: unknown[] = [];
  if (template.header) {
    const { format, text, example } = template.header;
    components.push({
      type: 'HEADER',
      format,
      ...(text === undefined ? {} : { text }),
      ...(example === undefined ? {} : { example: graphExample(format, example) }),
    });
  }
  components.push({ type: 'BODY', text: template.body });
  if (template.buttons.length > 0) components.push({ type: 'BUTTONS', buttons: template.buttons });
  return {
    id: template.id,
    name: template.name,
    language: template.language,
    status: template.status,
    category: 'MARKETING',
    components,
  };
}

/** A bare string example is put where Meta keeps it; anything else is shown as it was registered. */
function graphExample(format: HeaderFormat, example: unknown): unknown {
  if (typeof example !== 'string') return example;
  return isMediaFormat(format) ? { header_handle: [example] } : { header_text: [example] };
}

function pageSize(raw: unknown): number {
  if (raw === undefined) return DEFAULT_PAGE_SIZE;
  if (typeof raw !== 'string' || !/^[1-9]\d{0,3}$/.test(raw)) {
    throw invalidParameter('limit must be a whole number from 1 to 9999');
  }
  return Number(raw);
}

function startAfter(templates: RegisteredTemplate[], raw: unknown): number {
  if (raw === undefined) return 0;
  const index = typeof raw === 'string' ? templates.findIndex((template) => cursorOf(template) === raw) : -1;
  if (index === -1) throw invalidParameter('after is not a cursor of this list');
  return index + 1;
}

/** Cursors name a template rather than a position, so a replaced template does not shift a page. */
function cursorOf(template: RegisteredTemplate): string {
  return Buffer.from(template.id).toString('base64url');
}

/** Meta's `next` is the full URL of the next page: the same request with `after` moved on. */
function nextPageUrl(req: Request, limit: number, after: string): string {
  const url = new URL(req.originalUrl, `${req.protocol}://${req.get('host')}`);
  url.searchParams.set('limit', String(limit));
  url.searchParams.set('after', after);
  return url.toString();
}

function templateKey(account: string, name: string, language: string): string {
  return JSON.stringify([account, name, language]);
}

function defaultWabaId(account: string): string {
  return `waba-${account}`;
}

/** Meta's template ids are long decimal numbers. */
function templateId(): string {
  return BigInt(`0x${randomBytes(7).toString('hex')}`).toString();
}
