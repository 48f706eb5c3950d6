import { createHmac, randomBytes } from 'node:crypto';
import { sameSecret } from '@inbox/service-kit';
import type { ErrorRequestHandler } from 'express';
import { clientErrorStatus } from './client-error-status.js';

/** The Graph API error codes the Meta emulations answer with, named after Meta's documentation. */
export const GraphCode = {
  unexpectedError: 2,
  applicationRequestLimit: 4,
  permissionDenied: 10,
  apiCallRateLimit: 613,
  invalidParameter: 100,
  accessTokenInvalid: 190,
  callbackVerificationFailed: 2200,
  unknownPath: 2500,
  rateLimitHit: 130429,
  somethingWentWrong: 131000,
  pairRateLimitHit: 131056,
  reEngagementMessage: 131047,
  mediaUploadError: 131053,
  templateParamCountMismatch: 132000,
  templateDoesNotExist: 132001,
} as const;

/**
 * Graph's own errors (tokens, paths) carry a plain message; the WhatsApp codes carry `(#code) title`, as in
 * Meta's samples: `"message": "(#130429) Rate limit hit"`.
 */
const plainMessageCodes = new Set<number>([
  GraphCode.unexpectedError,
  GraphCode.accessTokenInvalid,
  GraphCode.callbackVerificationFailed,
  GraphCode.unknownPath,
]);

/**
 * A refusal in Graph's error shape, `error.{message,type,code,error_subcode,error_data,fbtrace_id}`.
 * Thrown by the Cloud API handlers and answered by `answerGraphError`, so every check reads as one line
 * that either passes or throws. Token errors carry no `error_data` (they are Graph's, not WhatsApp's);
 * an `error_subcode` only where Meta sends one.
 */
export class GraphError extends Error {
  override readonly name = 'GraphError';
  readonly details: string | undefined;
  readonly subcode: number | undefined;
  readonly type: string;

  /** `graphMethod`: one of Graph's own checks of a call's arguments, plain-worded, a GraphMethodException. */
  constructor(
    readonly status: number,
    readonly code: number,
    readonly title: string,
    details?: string,
    options: { subcode?: number; graphMethod?: boolean } = {},
  ) {
    super(plainMessageCodes.has(code) || options.graphMethod ? title : `(#${code}) ${title}`);
    this.details = details;
    this.subcode = options.subcode;
    this.type = options.graphMethod ? 'GraphMethodException' : 'OAuthException';
  }

  toBody() {
    return {
      error: {
        message: this.message,
        type: this.type,
        code: this.code,
        ...(this.subcode === undefined ? {} : { error_subcode: this.subcode }),
        ...(this.details === undefined
          ? {}
          : { error_data: { messaging_product: 'whatsapp', details: this.details } }),
        fbtrace_id: fbtraceId(),
      },
    };
  }
}

/** A missing, malformed or unknown bearer token: Graph's own error, without `error_data`. */
export function invalidToken(): GraphError {
  return new GraphError(
    401,
    GraphCode.accessTokenInvalid,
    'Invalid OAuth access token - Cannot parse access token',
  );
}

/** How a token stops working: it expires, or its user logs out (Graph's subcodes 463 and 467). */
export const TOKEN_ENDINGS = ['expired', 'logged_out'] as const;
export type TokenEnding = (typeof TOKEN_ENDINGS)[number];

/** Graph's answer to a token that was valid once: code 190, HTTP 401, no `error_data`. */
export function endedToken(ending: TokenEnding, endedAt: Date): GraphError {
  if (ending === 'logged_out') {
    return new GraphError(
      401,
      GraphCode.accessTokenInvalid,
      'Error validating access token: The session is invalid because the user logged out.',
      undefined,
      { subcode: 467 },
    );
  }
  return new GraphError(
    401,
    GraphCode.accessTokenInvalid,
    `Error validating access token: Session has expired on ${graphDate(endedAt)}. The current time is ${graphDate(new Date())}.`,
    undefined,
    { subcode: 463 },
  );
}

/**
 * Graph's check of a call's `appsecret_proof` (HMAC-SHA256 of the access token, keyed with the app
 * secret), made whenever a call carries one, "Require App Secret" on or not: another is refused.
 */
export function requireAppSecretProof(given: unknown, appSecret: string, token: string): void {
  const proof = createHmac('sha256', appSecret).update(token).digest('hex');
  if (sameSecret(typeof given === 'string' ? given : undefined, proof)) return;
  throw new GraphError(
    400,
    GraphCode.invalidParameter,
    'Invalid appsecret_proof provided in the API argument',
    undefined,
    { graphMethod: true },
  );
}

/** A call without `appsecret_proof` to an app whose "Require App Secret" setting is on. */
export function appSecretProofRequired(): GraphError {
  return new GraphError(
    400,
    GraphCode.invalidParameter,
    'API calls from the server require an appsecret_proof argument',
    undefined,
    {
      graphMethod: true,
    },
  );
}

export function invalidParameter(details: string): GraphError {
  return new GraphError(400, GraphCode.invalidParameter, 'Invalid parameter', details);
}

/** What a faulted or held call answers: Meta's catch-all for its own trouble. */
export function somethingWentWrong(status: number): GraphError {
  return new GraphError(status, GraphCode.somethingWentWrong, 'Something went wrong', 'sandbox fault');
}

/** The throttling errors, with the HTTP status Meta's error-code table gives them (400 Bad Request). */
export const THROTTLE_CODES = [GraphCode.rateLimitHit, GraphCode.pairRateLimitHit] as const;
export type ThrottleCode = (typeof THROTTLE_CODES)[number];

export function throttled(code: ThrottleCode): GraphError {
  if (code === GraphCode.rateLimitHit) {
    return new GraphError(400, code, 'Rate limit hit', 'Cloud API message throughput has been reached.', {
      subcode: 2494055,
    });
  }
  return new GraphError(
    400,
    code,
    '(Business, Consumer) pair rate limit hit',
    'Message failed to send because there were too many messages sent from this phone number to the same phone number in a short period of time.',
  );
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
    res.status(status).json(invalidParameter(error.message).toBody());
    return;
  }
  next(error);
};

/** Meta's trace ids are short opaque tokens; only their presence matters to a client. */
function fbtraceId(): string {
  return randomBytes(12).toString('base64url');
}

/** Graph writes dates in its token errors as `Tuesday, 17-Oct-23 03:00:00 PDT`; the sandbox uses UTC. */
function graphDate(at: Date): string {
  const weekday = at.toLocaleDateString('en-US', { weekday: 'long', timeZone: 'UTC' });
  const [, day, month, year] = /^\w+, (\d+) (\w+) \d\d(\d\d)/.exec(at.toUTCString()) ?? [];
  const time = at.toISOString().slice(11, 19);
  return `${weekday}, ${day}-${month}-${year} ${time} UTC`;
}
