import type { ZodType } from 'zod';
import { ControlError } from './control-error.js';

/** Parses a control call's input, refusing it with 400 and every problem found, each with its field. */
export function parseControl<T>(schema: ZodType<T>, input: unknown): T {
  const parsed = schema.safeParse(input);
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues.map((issue) =>
    issue.path.length === 0 ? issue.message : `${issue.path.join('.')}: ${issue.message}`,
  );
  throw new ControlError(400, problems.join('; '));
}
