import { STATUS_CODES } from 'node:http';
import {
  ForbiddenAddressError,
  guardedJson,
  OutboundTimeoutError,
  ResponseTooLargeError,
} from '@inbox/outbound-http';
import { meter, withHttpClientSpan } from '@inbox/telemetry';
import { SpanStatusCode } from '@opentelemetry/api';
import { type ProviderCall, ProviderError } from './channel-adapter.js';

const providerDuration = meter('provider-connector').createHistogram('provider.request.duration', {
  description: 'Duration of calls to channel providers, by channel and outcome',
  unit: 's',
});

export interface ProviderAnswer {
  status: number;
  ok: boolean;
  headers: Record<string, string | string[] | undefined>;
  body: unknown;
}

export function joinUrl(base: string, path: string): URL {
  return new URL(path, base.endsWith('/') ? base : `${base}/`);
}

/**
 * An answer's status as a metric's outcome: a provider the tenant names may answer any number from 100
 * to 999, and each would be a series of its own; the statuses HTTP registers keep their number.
 */
export function statusOutcome(status: number): string {
  return STATUS_CODES[status] === undefined ? 'http_other' : `http_${status}`;
}

function failureOutcome(error: unknown, call: ProviderCall): string {
  if (call.signal.aborted || error instanceof OutboundTimeoutError) return 'timeout';
  if (error instanceof ForbiddenAddressError) return 'forbidden_address';
  if (error instanceof ResponseTooLargeError) return 'too_large';
  return 'unreachable';
}

/**
 * One provider call, JSON in and out, through the guarded client: the provider's address must be one the
 * policy permits, a redirect is an answer (not ok) rather than followed with the credentials, and the
 * answer is bounded in size and time. Failures to get an answer become ProviderError.
 *
 * The call is one CLIENT span, named by its method as HTTP client spans are, under the command's span,
 * and the provider is sent that span's context (ADR 0012). Its duration is `provider.request.duration`,
 * by channel and outcome.
 */
export async function callProvider(
  call: ProviderCall,
  channel: string,
  url: URL,
  init: { method: 'GET' | 'POST' | 'PUT'; headers: Record<string, string>; body?: unknown },
): Promise<ProviderAnswer> {
  const started = performance.now();
  const done = (outcome: string) =>
    providerDuration.record((performance.now() - started) / 1000, { channel, outcome });
  try {
    const answer = await withHttpClientSpan(
      init.method,
      { method: init.method, url },
      async (span, traceHeaders) => {
        const answer = await guardedJson(call.guard, url, {
          ...init,
          tenant: call.workspaceId,
          headers: { ...init.headers, ...traceHeaders },
          signal: call.signal,
        });
        span.setAttribute('http.response.status_code', answer.status);
        // As the HTTP client conventions have it: a 4xx or 5xx answer is the call's failure.
        if (answer.status >= 400) {
          span.setAttribute('error.type', String(answer.status));
          span.setStatus({ code: SpanStatusCode.ERROR });
        }
        return answer;
      },
    );
    done(answer.ok ? 'ok' : statusOutcome(answer.status));
    return { status: answer.status, ok: answer.ok, headers: answer.headers, body: answer.body };
  } catch (error) {
    done(failureOutcome(error, call));
    throw new ProviderError(`${channel} unreachable: ${(error as Error).message}`, undefined, undefined, {
      cause: error,
    });
  }
}

/** A refusal's `Retry-After` (a 429's, a 503's) in words, for the reason a failed send keeps; empty when absent. */
export function retryAfterNote(answer: ProviderAnswer): string {
  const value = headerValue(answer.headers, 'retry-after');
  return value ? ` (Retry-After: ${value})` : '';
}

export function headerValue(
  headers: Record<string, string | string[] | undefined>,
  name: string,
): string | undefined {
  const value = headers[name.toLowerCase()];
  return Array.isArray(value) ? value[0] : value;
}
