import { AppError, platformTexts, type TemplateSend } from '@inbox/contracts';

export interface CatalogueEntry {
  name: string;
  language: string;
  status: string;
  body: string;
  header_format: string | null;
}

const mediaFormats = new Set(['IMAGE', 'VIDEO', 'DOCUMENT']);

/** The distinct `{{N}}` placeholders of a template body: what `variables` must count. */
export function placeholderCount(body: string): number {
  return new Set([...body.matchAll(/\{\{\s*(\d+)\s*\}\}/g)].map((match) => match[1])).size;
}

/** The body as the contact reads it: each `{{N}}` replaced by the N-th variable. */
export function renderBody(body: string, variables: Array<string | number>): string {
  return body.replace(/\{\{\s*(\d+)\s*\}\}/g, (whole, n: string) => {
    const value = variables[Number(n) - 1];
    return value === undefined ? whole : String(value);
  });
}

/**
 * The provider's own checks, made before it is called: an approved template of that name and language
 * (132001), as many variables as placeholders (132000), and the approved media header (131053).
 */
export function checkAgainstCatalogue(entry: CatalogueEntry | undefined, send: TemplateSend): CatalogueEntry {
  if (entry?.status !== 'APPROVED') {
    throw AppError.template(132001, platformTexts.templateNotFound(send.name, send.language));
  }
  const expected = placeholderCount(entry.body);
  if (expected !== send.variables.length) {
    throw AppError.template(
      132000,
      platformTexts.templateVariables(send.name, expected, send.variables.length),
    );
  }
  const format =
    entry.header_format && mediaFormats.has(entry.header_format) ? entry.header_format.toLowerCase() : null;
  if (format && !send.headerMedia)
    throw AppError.template(131053, platformTexts.templateHeaderMissing(send.name, format));
  if (format && send.headerMedia && send.headerMedia.type !== format) {
    throw AppError.template(
      131053,
      platformTexts.templateHeaderMismatch(send.name, format, send.headerMedia.type),
    );
  }
  if (!format && send.headerMedia)
    throw AppError.template(131053, platformTexts.templateHeaderUnexpected(send.name));
  return entry;
}

/** The Cloud API template `components` built from the send: header, body in order, dynamic buttons. */
export function templateComponents(send: TemplateSend): unknown[] {
  const components: unknown[] = [];
  if (send.headerMedia) {
    const { type, link, filename } = send.headerMedia;
    components.push({
      type: 'header',
      parameters: [{ type, [type]: { link, ...(type === 'document' && filename ? { filename } : {}) } }],
    });
  }
  if (send.variables.length > 0) {
    components.push({
      type: 'body',
      parameters: send.variables.map((value) => ({ type: 'text', text: String(value) })),
    });
  }
  for (const button of send.buttons ?? []) {
    components.push({
      type: 'button',
      sub_type: button.type,
      index: String(button.index),
      parameters: [
        button.type === 'url'
          ? { type: 'text', text: button.text }
          : { type: 'payload', payload: button.payload },
      ],
    });
  }
  return components;
}
