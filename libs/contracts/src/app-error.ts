import type { ErrorResponse } from './error-response.js';
import { errorTexts, platformTexts } from './error-texts.js';

/**
 * A failure with the exact HTTP status and ErrorResponse body the caller must see. Thrown anywhere in a
 * service; a command reply or the HTTP error middleware turns it into the answer unchanged.
 */
export class AppError extends Error {
  override name = 'AppError';
  /** What went wrong inside, for records and logs; never part of an HTTP answer. */
  readonly detail: string | undefined;

  constructor(
    readonly status: number,
    readonly body: ErrorResponse,
    options?: { cause?: unknown; detail?: string },
  ) {
    // A refusal the caller caused is an answer, not a fault: no stack trace is captured for it (the
    // door answers thousands a second, and a span that records the error would format the trace too).
    const stackTraceLimit = Error.stackTraceLimit;
    if (status < 500) Error.stackTraceLimit = 0;
    super(body.error, options);
    Error.stackTraceLimit = stackTraceLimit;
    this.detail = options?.detail ?? (options?.cause instanceof Error ? options.cause.message : undefined);
  }

  static badRequest(error: string): AppError {
    return new AppError(400, { error });
  }
  static notFound(error: string): AppError {
    return new AppError(404, { error });
  }
  /** The official channel's 24-hour window is closed (provider code 131047): only a template may open it. */
  static windowClosed(cause?: unknown): AppError {
    return new AppError(
      400,
      { error: platformTexts.windowClosed, requires_template: true, meta_error_code: 131047 },
      { cause },
    );
  }
  /** A template the provider (or our copy of its catalogue) refuses, with the provider's own code. */
  static template(metaErrorCode: 132000 | 132001 | 131053, error: string, cause?: unknown): AppError {
    return new AppError(400, { error, meta_error_code: metaErrorCode }, { cause });
  }
  static unavailable(cause?: unknown): AppError {
    return new AppError(503, { error: platformTexts.serviceUnavailable }, { cause });
  }
  static internal(cause?: unknown): AppError {
    return new AppError(500, { error: errorTexts.internal }, { cause });
  }
}

/** The message of anything thrown, for logs and records; never sent to API callers as is. */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
