import { ZodObject, type ZodType } from 'zod';
import { ControlError } from './control-error.js';

/**
 * Parses a control call's input, refusing it with 400 and every problem found, each with its field. A
 * key the control does not know is one of them: a misspelt one (`addressingMode` for `addressing_mode`)
 * would otherwise be dropped, and the test that sent it pass without trying what it meant to.
 */
export function parseControl<T>(schema: ZodType<T>, input: unknown): T {
  const strict = schema instanceof ZodObject ? (schema.strict() as unknown as ZodType<T>) : schema;
  const parsed = strict.safeParse(input);
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues.map((issue) => {
    // Named here: a schema's own message (`body must be a JSON object`) would stand for it otherwise.
    const message =
      issue.code === 'unrecognized_keys'
        ? `unknown key ${issue.keys.map((key) => `"${key}"`).join(', ')}`
        : issue.message;
    return issue.path.length === 0 ? message : `${issue.path.join('.')}: ${message}`;
  });
  throw new ControlError(400, problems.join('; '));
}
