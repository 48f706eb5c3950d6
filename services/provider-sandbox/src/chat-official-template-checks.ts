import { type HeaderFormat, isMediaFormat, type TemplateRegistry } from './chat-official-templates.js';
import { GraphCode, GraphError } from './graph-error.js';

/** A parameter as sent; only its `type` is common to all kinds, the rest depends on the kind. */
export type SendParameter = { type: string } & Record<string, unknown>;

export interface SendComponent {
  type: 'header' | 'body' | 'button';
  parameters: SendParameter[];
}

export interface TemplateSend {
  name: string;
  language: { code: string };
  components: SendComponent[];
}

/**
 * Refuses a template send as Meta does at once: an unknown or unapproved template, a body parameter count
 * that does not fill the placeholders, a media header without an http(s) media link. Whether the link can
 * be fetched is only found out after the send is accepted (a `failed` status). Buttons are not checked.
 */
export function checkTemplateSend(registry: TemplateRegistry, account: string, send: TemplateSend): void {
  const { name } = send;
  const language = send.language.code;
  const template = registry.find(account, name, language);
  // A template still in review, or rejected, is as unusable as one that was never submitted.
  if (template?.status !== 'APPROVED') {
    throw new GraphError(
      404,
      GraphCode.templateDoesNotExist,
      'Template name does not exist in the translation',
      `template name (${name}) does not exist in ${language}`,
    );
  }

  const expected = placeholderCount(template.body);
  const received = parametersOf(send, 'body').length;
  if (received !== expected) {
    throw new GraphError(
      400,
      GraphCode.templateParamCountMismatch,
      'Number of parameters does not match the expected number of params',
      `body: number of localizable_params (${received}) does not match the expected number of params (${expected})`,
    );
  }

  const format = template.header?.format;
  if (format !== undefined && isMediaFormat(format)) checkMediaHeader(send, format);
}

/** A media header as sent: what Meta downloads when it sends the template. */
export interface MediaHeader {
  kind: 'image' | 'video' | 'document';
  link: string;
}

/** The media link of a send that passed `checkTemplateSend`, when its template has a media header. */
export function mediaHeaderOf(
  registry: TemplateRegistry,
  account: string,
  send: TemplateSend,
): MediaHeader | undefined {
  const format = registry.find(account, send.name, send.language.code)?.header?.format;
  if (format === undefined || !isMediaFormat(format)) return undefined;
  const kind = format.toLowerCase() as MediaHeader['kind'];
  const [parameter] = parametersOf(send, 'header');
  const link = linkOf(parameter?.[kind]);
  return typeof link === 'string' ? { kind, link } : undefined;
}

function checkMediaHeader(send: TemplateSend, format: HeaderFormat): void {
  const kind = format.toLowerCase();
  const [parameter] = parametersOf(send, 'header');
  if (!parameter) throw mediaError(`header: ${article(kind)} parameter is required by the template`);
  if (parameter.type !== kind) {
    throw mediaError(`header: expected ${article(kind)} parameter, received ${parameter.type}`);
  }
  const link = linkOf(parameter[kind]);
  if (!isHttpUrl(link)) throw mediaError(`header: ${kind}.link must be an http(s) URL`);
}

function parametersOf(send: TemplateSend, type: SendComponent['type']): SendParameter[] {
  return send.components.filter((component) => component.type === type).flatMap((c) => c.parameters);
}

/** Placeholders may repeat (`{{1}} ... {{1}}`); each distinct one takes one parameter. */
function placeholderCount(body: string): number {
  return new Set([...body.matchAll(/\{\{\s*(\d+)\s*\}\}/g)].map((match) => match[1])).size;
}

function linkOf(media: unknown): unknown {
  return typeof media === 'object' && media !== null && 'link' in media ? media.link : undefined;
}

function isHttpUrl(value: unknown): boolean {
  if (typeof value !== 'string' || !URL.canParse(value)) return false;
  const { protocol } = new URL(value);
  return protocol === 'http:' || protocol === 'https:';
}

function article(kind: string): string {
  return `${/^[aeiou]/.test(kind) ? 'an' : 'a'} ${kind}`;
}

function mediaError(details: string): GraphError {
  return new GraphError(400, GraphCode.mediaUploadError, 'Media upload error', details);
}
