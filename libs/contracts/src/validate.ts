import { z } from 'zod';

export type Validation<T> = { ok: true; value: T } | { ok: false; error: string };

export interface BodyRule<S extends z.ZodType> {
  /** Fields whose absence (or an empty value) is answered with `requiredText`, before anything else. */
  required: readonly string[];
  requiredText: string;
  /** Fields in the order their errors take precedence; each field's schema carries its own text. */
  schema: S;
}

// The spec's "Parâmetros obrigatórios" rows treat every empty value (absent, null, "") as missing.
function isMissing(value: unknown): boolean {
  return value === undefined || value === null || value === '';
}

/**
 * The schema's verdict through its Standard Schema face: the first issue's text, or the parsed value.
 * `safeParse` would build a ZodError for a refusal, an Error whose stack trace is captured only to be
 * dropped; the issues and their texts are the same.
 */
export function check<S extends z.ZodType>(schema: S, value: unknown): Validation<z.output<S>> {
  const result = schema['~standard'].validate(value);
  // The request schemas are synchronous; an asynchronous one would be refused by safeParse as well.
  if (result instanceof Promise) throw new Error('request schemas must be synchronous');
  if (result.issues) return { ok: false, error: result.issues[0]?.message ?? '' };
  return { ok: true, value: result.value as z.output<S> };
}

/** Checks a public request body and returns the first error text the spec prescribes, or the typed value. */
export function validateBody<S extends z.ZodType>(rule: BodyRule<S>, body: unknown): Validation<z.output<S>> {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    return { ok: false, error: rule.requiredText };
  const record = body as Record<string, unknown>;
  if (rule.required.some((field) => isMissing(record[field]))) return { ok: false, error: rule.requiredText };
  return check(rule.schema, body);
}

/**
 * True when Postgres keeps `text` as it is: no NUL (which `text` and `jsonb` refuse, failing the whole
 * statement) and no lone surrogate (which the driver would silently turn into U+FFFD). The rule of
 * @inbox/db's isStorableText, stated again because contracts do not depend on the database library.
 */
export function isStorableString(text: string): boolean {
  return !text.includes('\u0000') && text.isWellFormed();
}

/**
 * A string field of a request body that will be stored. A wrong type answers `error`, text that could
 * not be stored as sent answers `notStorable`; chain length checks after it.
 */
export function storableString(error: string, notStorable = error) {
  return z.string({ error }).refine(isStorableString, { error: notStorable });
}
