import { isIP } from 'node:net';
import { storableText, storableUtf8 } from '@inbox/db';
import {
  type AddressPolicy,
  asTenant,
  Deadline,
  type Dispatcher,
  hostOf,
  request,
} from '@inbox/outbound-http';
import { deliveryHeaders } from '@inbox/sdk/webhooks';
import { parseRetryAfter } from './retry-policy.js';

export interface AttemptInput {
  /** The workspace the delivery is for: the receiver's name takes its turn (HostResolver). */
  workspaceId: string;
  url: string;
  body: string;
  eventId: string;
  eventType: string;
  secret: string | null;
  /** The secret a rotation replaced, while it is still honoured: it signs too. */
  previousSecret: string | null;
  /** The trace context the receiver continues (`traceparent`), when the attempt is traced. */
  traceHeaders?: Record<string, string>;
}

/** What one attempt came to; its texts are storable as they are (no NUL, well-formed). */
export interface HttpOutcome {
  statusCode: number | null;
  error: string | null;
  retryAfterSeconds: number | null;
  /** The first 2 KB of the receiver's answer, for the delivery log. */
  responseBody: string | null;
  durationMs: number;
}

const responseSnippetBytes = 2048;
// Error messages can quote what the receiver sent (a header, a status line), and are stored as text.
const errorChars = 500;

/** An error's message as the delivery log stores it: storable, and bounded. */
export function storableError(error: unknown): string {
  return storableText(error instanceof Error ? error.message : String(error), errorChars);
}

async function firstBytes(body: AsyncIterable<Buffer | Uint8Array>, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    chunks.push(Buffer.from(chunk));
    size += chunk.length;
    if (size >= limit) break;
  }
  return Buffer.concat(chunks);
}

/**
 * One POST, bounded as a whole by `timeoutMs` (connecting, waiting, and reading the first 2 KB of the
 * answer). Redirects are not followed: undici's request() follows none without a redirect interceptor.
 */
export async function attemptDelivery(
  input: AttemptInput,
  deps: { agent: Dispatcher; policy: AddressPolicy; timeoutMs: number },
): Promise<HttpOutcome> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const host = hostOf(new URL(input.url));
  // Names are checked by the agent's lookup at connect time; literal addresses never reach a lookup.
  if (isIP(host) && !deps.policy.permits(host)) {
    return {
      statusCode: null,
      error: storableText(`forbidden address ${host}`, errorChars),
      retryAfterSeconds: null,
      responseBody: null,
      durationMs: 0,
    };
  }
  const deadline = new Deadline(deps.timeoutMs);
  const signal = deadline.signal;
  try {
    const response = await deadline.race(
      asTenant(input.workspaceId, () =>
        request(input.url, {
          method: 'POST',
          body: input.body,
          headers: { ...input.traceHeaders, ...deliveryHeaders({ ...input, now: new Date() }) },
          dispatcher: deps.agent,
          signal,
        }),
      ),
    );
    response.body.on('error', () => undefined);
    let responseBody: string | null = null;
    try {
      // Whatever bytes the receiver sent (NUL, invalid UTF-8) become text Postgres accepts: one
      // receiver's answer must never fail the batch it is recorded with.
      responseBody = storableUtf8(
        await firstBytes(response.body, responseSnippetBytes),
        responseSnippetBytes,
      );
    } catch {
      // The status is what counts; an answer cut short by the time limit still has one.
    }
    response.body.destroy();
    const retryAfter = response.headers['retry-after'];
    return {
      statusCode: response.statusCode,
      error: null,
      retryAfterSeconds: parseRetryAfter(Array.isArray(retryAfter) ? retryAfter[0] : retryAfter, new Date()),
      responseBody,
      durationMs: elapsed(),
    };
  } catch (error) {
    const code = (error as { code?: string } | null)?.code ?? '';
    const timedOut = signal.aborted || /TIMEOUT/.test(code);
    return {
      statusCode: null,
      error: timedOut ? `timed out after ${deps.timeoutMs} ms` : storableError(error),
      retryAfterSeconds: null,
      responseBody: null,
      durationMs: elapsed(),
    };
  } finally {
    deadline.clear();
  }
}
