import {
  AppError,
  type CommandReply,
  CommandReply as CommandReplySchema,
  platformTexts,
} from '@inbox/contracts';

export type CommandFailureLog = (error: unknown, subject: string) => void;

/** Turns a handler's outcome into the wire reply: known failures keep their status and body. */
export function replyFromError(error: unknown): CommandReply {
  if (error instanceof AppError) {
    return {
      ok: false,
      error: { status: error.status, body: error.body, ...(error.detail ? { detail: error.detail } : {}) },
    };
  }
  const internal = AppError.internal(error);
  return { ok: false, error: { status: internal.status, body: internal.body } };
}

/** Turns a wire reply back into the handler's data, or throws the AppError it carried. */
export function resultFromReply(raw: unknown): unknown {
  const reply = CommandReplySchema.parse(raw);
  if (reply.ok) return reply.data;
  throw new AppError(reply.error.status, reply.error.body, { detail: reply.error.detail });
}

export function timeoutError(subject: string, cause?: unknown): AppError {
  return new AppError(
    504,
    { error: platformTexts.serviceTimeout(subject.split('.')[1] ?? subject) },
    { cause },
  );
}

export function noResponderError(subject: string, cause?: unknown): AppError {
  return new AppError(503, { error: platformTexts.serviceUnavailable }, { cause: cause ?? subject });
}
