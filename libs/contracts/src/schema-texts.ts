import type { z } from 'zod';

type ZodDef = {
  type: string;
  error?: (issue: unknown) => unknown;
  checks?: Array<{ _zod: { def: { error?: (issue: unknown) => unknown } } }>;
  shape?: Record<string, z.ZodType>;
  innerType?: z.ZodType;
  in?: z.ZodType;
  out?: z.ZodType;
  element?: z.ZodType;
  keyType?: z.ZodType;
  valueType?: z.ZodType;
  options?: z.ZodType[];
};

/** The texts a schema's own checks answer, each with the field it is about, in the order they are checked. */
export function schemaTexts(schema: z.ZodType, field: string): Array<{ field: string; text: string }> {
  const def = (schema as unknown as { _zod: { def: ZodDef } })._zod.def;
  const found: Array<{ field: string; text: string }> = [];
  const take = (error: ZodDef['error']) => {
    if (!error) return;
    const written = error({ code: 'custom', input: undefined, path: [] });
    const text =
      typeof written === 'string' ? written : (written as { message?: string } | undefined)?.message;
    if (text) found.push({ field, text });
  };
  take(def.error);
  for (const check of def.checks ?? []) take(check._zod.def.error);
  const within = (inner: z.ZodType | undefined, name = field) => {
    if (inner) found.push(...schemaTexts(inner, name));
  };
  for (const [key, value] of Object.entries(def.shape ?? {})) within(value, field ? `${field}.${key}` : key);
  within(def.innerType);
  within(def.in);
  within(def.out);
  within(def.element, `${field}[]`);
  within(def.keyType);
  within(def.valueType);
  for (const option of def.options ?? []) within(option);
  return found;
}
