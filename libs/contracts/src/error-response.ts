import { z } from 'zod';

export const ErrorResponse = z.object({
  error: z.string(),
  requires_template: z.literal(true).optional(),
  meta_error_code: z.number().int().optional(),
});
export type ErrorResponse = z.infer<typeof ErrorResponse>;

/**
 * How a command reply carries a failure: the status and the exact body the HTTP caller gets, and an
 * internal `detail` (what really went wrong, e.g. the provider's own error) for records and logs only.
 */
export const Failure = z.object({
  status: z.number().int(),
  body: ErrorResponse,
  detail: z.string().optional(),
});
export type Failure = z.infer<typeof Failure>;
