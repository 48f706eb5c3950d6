import type { ReadableSpan, Span, SpanProcessor } from '@opentelemetry/sdk-trace-base';

const REDACTED = 'REDACTED';

/**
 * Query parameters whose values are credentials or proofs of one: provider tokens and keys
 * (`client_token`, `access_token`, `apikey`), signatures, passwords, OAuth codes, and every `hub.*`
 * parameter of the chat-official subscription handshake (`hub.verify_token`, and `hub.challenge`, which
 * the connector echoes back as proof). The rule errs towards redacting: a harmless value lost from a
 * trace costs less than a credential kept in one.
 */
const SECRET_QUERY_NAME = /^hub\.|token|secret|key|signature|password|code|auth/i;

/** Path segments that are credentials: the one after a `token` segment (`/instances/{id}/token/{token}/`). */
const TOKEN_SEGMENT = /^token$/i;
/** The Telegram Bot API puts its token in the path: `/bot<id>:<secret>/sendMessage`. */
const BOT_TOKEN_SEGMENT = /^bot\d+:.+$/;

/**
 * What any rule above needs to find in a string before it can change it: an escape or a `+` that could
 * hide a word, user info, or one of the words themselves. Most URLs in spans (our own routes, providers'
 * send paths) have none of these, and every span is looked at: they are passed on without being taken apart.
 */
const MAYBE_SECRET = /[%+@]|hub\.|token|secret|key|signature|password|code|auth|bot\d/i;

function decoded(text: string): string {
  // Most segments and names are plain: only an escape or a `+` can hide what the rules look for.
  if (!text.includes('%') && !text.includes('+')) return text;
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '));
  } catch {
    return text;
  }
}

/** A query string (with or without its leading `?`) with the values of secret-looking parameters replaced. */
export function redactQuery(query: string): string {
  if (!MAYBE_SECRET.test(query)) return query;
  const lead = query.startsWith('?') ? '?' : '';
  return (
    lead +
    query
      .slice(lead.length)
      .split('&')
      .map((pair) => {
        const equals = pair.indexOf('=');
        if (equals === -1) return pair;
        const name = pair.slice(0, equals);
        return SECRET_QUERY_NAME.test(decoded(name)) ? `${name}=${REDACTED}` : pair;
      })
      .join('&')
  );
}

/** A path (or `scheme://host/path`) with the segments that carry a credential replaced. */
export function redactPath(path: string): string {
  if (!MAYBE_SECRET.test(path)) return path;
  const segments = path.split('/');
  return segments
    .map((segment, index) => {
      if (index > 0 && TOKEN_SEGMENT.test(decoded(segments[index - 1]!)) && segment !== '') return REDACTED;
      if (BOT_TOKEN_SEGMENT.test(decoded(segment))) return `bot${REDACTED}`;
      return segment;
    })
    .join('/');
}

/** A full URL or a request target (`/path?query`) with user info, secret path segments and query values redacted. */
export function redactUrl(url: string): string {
  if (!MAYBE_SECRET.test(url)) return url;
  const withoutUserInfo = url.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/?#@]*@/i, `$1${REDACTED}@`);
  const query = withoutUserInfo.search(/[?#]/);
  if (query === -1) return redactPath(withoutUserInfo);
  // The fragment is redacted like the query: OAuth's implicit flow puts access_token there.
  const rest = withoutUserInfo
    .slice(query)
    .split('#')
    .map((part) => redactQuery(part))
    .join('#');
  return redactPath(withoutUserInfo.slice(0, query)) + rest;
}

/** The span attributes that hold a URL or part of one, old and stable semantic conventions alike. */
const URL_ATTRIBUTES: ReadonlyArray<readonly [string, (value: string) => string]> = [
  ['url.full', redactUrl],
  ['http.url', redactUrl],
  ['http.target', redactUrl],
  ['url.path', redactPath],
  ['url.query', redactQuery],
];

/** Rewrites a span's URL attributes, and its name where it carries a URL, in place. */
export function redactSpanUrls(span: Span): void {
  for (const [key, redact] of URL_ATTRIBUTES) {
    const value = span.attributes[key];
    if (typeof value !== 'string') continue;
    const redacted = redact(value);
    if (redacted !== value) span.setAttribute(key, redacted);
  }
  // Span names hold a URL only where they hold a path or a query (most are `POST /route` or a query's verb).
  if (!span.name.includes('/') && !span.name.includes('?')) return;
  const name = span.name.split(' ').map(redactUrl).join(' ');
  if (name !== span.name) span.updateName(name);
}

/**
 * Redacts every span, client and server alike, whatever instrumentation made it, before any exporter
 * sees it: `onEnding` runs while the span can still change, after every attribute has been set and
 * before any processor's `onEnd`. It is marked experimental in the SDK, whose version is pinned in
 * package.json; test/url-redaction.test.ts proves it still works after an upgrade.
 */
export class UrlRedactingSpanProcessor implements SpanProcessor {
  onStart(): void {}
  onEnding(span: Span): void {
    redactSpanUrls(span);
  }
  onEnd(_span: ReadableSpan): void {}
  forceFlush(): Promise<void> {
    return Promise.resolve();
  }
  shutdown(): Promise<void> {
    return Promise.resolve();
  }
}
