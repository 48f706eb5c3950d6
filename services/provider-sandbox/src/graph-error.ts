import { randomBytes } from 'node:crypto';
import type { ErrorRequestHandler } from 'express';
import { clientErrorStatus } from './client-error-status.js';

/** The Graph API error codes the Cloud API emulation answers with, named after Meta's documentation. */
export const GraphCode = {
  invalidParameter: 100,
  accessTokenInvalid: 190,
  callbackVerificationFailed: 2200,
  unknownPath: 2500,
  somethingWentWrong: 131000,
  reEngagementMessage: 131047,
  mediaUploadError: 131053,
  templateParamCountMismatch: 132000,
  templateDoesNotExist: 132001,
} as const;

/**
 * A refusal in Graph's error shape. Thrown by the Cloud API handlers and answered by `answerGraphError`,
 * so every check reads as one line that either passes or throws.
 */
export class GraphError extends Error {
  override readonly name = 'GraphError';

  constructor(
    readonly status: number,
    readonly code: number,
    message: string,
    readonly details: string,
  ) {
    super(message);
  }

  toBody() {
    return {
      error: {
        message: this.message,
        type: 'OAuthException',
        code: this.code,
        error_data: { messaging_product: 'whatsapp', details: this.details },
        fbtrace_id: fbtraceId(),
      },
    };
  }
}

export function invalidToken(details: string): GraphError {
  return new GraphError(
    401,
    GraphCode.accessTokenInvalid,
    'Invalid OAuth access token - Cannot parse access token',
    details,
  );
}

export function invalidParameter(details: string): GraphError {
  return new GraphError(400, GraphCode.invalidParameter, 'Invalid parameter', details);
}

/** What a faulted or held call answers: Meta's catch-all for its own trouble. */
export function somethingWentWrong(status: number): GraphError {
  return new GraphError(status, GraphCode.somethingWentWrong, 'Something went wrong', 'sandbox fault');
}

/**
 * Last handler of the Cloud API router. Malformed JSON reaches it too, because the router parses its own
 * bodies, so the connector never sees a non-Graph error from this channel.
 */
export const answerGraphError: ErrorRequestHandler = (error: unknown, _req, res, next) => {
  if (res.headersSent) {
    next(error);
    return;
  }
  if (error instanceof GraphError) {
    res.status(error.status).json(error.toBody());
    return;
  }
  const status = clientErrorStatus(error);
  if (status !== undefined && error instanceof Error) {
    const refusal = new GraphError(status, GraphCode.invalidParameter, 'Invalid parameter', error.message);
    res.status(status).json(refusal.toBody());
    return;
  }
  next(error);
};

/** Meta's trace ids are short opaque tokens; only their presence matters to a client. */
function fbtraceId(): string {
  return randomBytes(12).toString('base64url');
}
