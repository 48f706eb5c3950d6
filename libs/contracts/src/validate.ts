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

/**
 * A text's length in characters as the API counts them: code points, so an emoji outside the BMP is one
 * (JSON Schema's `maxLength` counts the same way). Counted without building an array of the characters.
 */
export function codePointLength(text: string): number {
  let length = text.length;
  for (let i = 0; i < text.length - 1; i++) {
    const unit = text.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        length--;
        i++;
      }
    }
  }
  return length;
}

/** True when `text` has `min` to `max` characters (code points); counts only when its UTF-16 length cannot tell. */
export function hasCharacters(text: string, min: number, max: number): boolean {
  // A text has no more code points than UTF-16 units, and no fewer than half of them.
  if (text.length < min || Math.ceil(text.length / 2) > max) return false;
  if (text.length <= max && Math.ceil(text.length / 2) >= min) return true;
  const length = codePointLength(text);
  return length >= min && length <= max;
}

/**
 * A storable string field of `min` to `max` characters, counted as code points as the error texts'
 * "caracteres" say (zod's own `min`/`max` count UTF-16 units, so 61 emoji would be 122). The OpenAPI
 * document still shows the bounds. Checked after any `trim` of the caller's: pass the trimmed schema.
 */
export function ofCharacters<S extends z.ZodString>(schema: S, min: number, max: number, error: string): S {
  return schema
    .refine((text) => hasCharacters(text, min, max), { error })
    .meta({ ...(min > 0 ? { minLength: min } : {}), maxLength: max }) as S;
}

/** `storableString` of `min` to `max` characters (code points), every failure answered with `error`. */
export function storableText(error: string, min: number, max: number, notStorable = error) {
  return ofCharacters(storableString(error, notStorable), min, max, error);
}
