import { z } from 'zod';

export const ErrorResponse = z.object({
  error: z.string(),
  requires_template: z.literal(true).optional(),
  meta_error_code: z.number().int().optional(),
});
export type ErrorResponse = z.infer<typeof ErrorResponse>;

/** How a command reply or an HTTP answer carries a failure: the status and the exact body to return. */
export const Failure = z.object({ status: z.number().int(), body: ErrorResponse });
export type Failure = z.infer<typeof Failure>;
