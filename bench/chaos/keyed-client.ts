// A careful API client: every request carries its own Idempotency-Key and is sent again, with that same
// key and body, until it gets an answer that will not change.

/** One keyed request of the load, as sent on every try. */
export interface KeyedRequest {
  key: string;
  kind: 'send-message' | 'send-template' | 'external-send';
  path: string;
  body: Record<string, unknown>;
}

/** What became of one key: when it was first tried, when (and with what) it was answered for good. */
export interface KeyOutcome {
  request: KeyedRequest;
  startedAt: number;
  /** When the answer that will not change arrived; undefined when the client gave up first. */
  finalAt?: number;
  status?: number;
  answer?: Record<string, unknown>;
  attempts: number;
  /** The last answer that was not final (status and text, or the network error), for the report. */
  lastRetried?: string;
}

export interface CarefulClientOptions {
  /** Gives up on a key (leaving it not final) once this much time has passed since its first try. */
  giveUpAfterMs: number;
  /** The longest one try may wait for its answer. */
  attemptTimeoutMs?: number;
}

/**
 * Whether an answer is worth sending again: a network failure, a 5xx, a 429, or a 409 that says when
 * to come back (Retry-After: the key is still in flight elsewhere). A 409 without Retry-After is an
 * answer in its own right (the platform will not send that message again) and so is final.
 */
export function retryable(status: number | undefined, retryAfter: string | null): boolean {
  if (status === undefined || status >= 500 || status === 429) return true;
  return status === 409 && retryAfter !== null;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Sends `request` until its answer is final (see `retryable`), honouring Retry-After, or gives up. */
export async function callUntilFinal(
  gatewayUrl: string,
  apiKey: string,
  request: KeyedRequest,
  { giveUpAfterMs, attemptTimeoutMs = 60_000 }: CarefulClientOptions,
): Promise<KeyOutcome> {
  const outcome: KeyOutcome = { request, startedAt: Date.now(), attempts: 0 };
  for (let backoffMs = 100; Date.now() - outcome.startedAt < giveUpAfterMs; ) {
    outcome.attempts++;
    let status: number | undefined;
    let retryAfter: string | null = null;
    try {
      const response = await fetch(`${gatewayUrl}${request.path}`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${apiKey}`,
          'content-type': 'application/json',
          'idempotency-key': request.key,
        },
        body: JSON.stringify(request.body),
        signal: AbortSignal.timeout(attemptTimeoutMs),
      });
      status = response.status;
      retryAfter = response.headers.get('retry-after');
      const answer = (await response.json().catch(() => ({}))) as Record<string, unknown>;
      if (!retryable(status, retryAfter)) {
        Object.assign(outcome, { finalAt: Date.now(), status, answer });
        return outcome;
      }
      outcome.lastRetried = `${status} ${String(answer.error ?? '')}`;
    } catch (error) {
      outcome.lastRetried = (error as Error).message;
    }
    const seconds = Number(retryAfter);
    const waitMs = retryAfter !== null && Number.isFinite(seconds) ? seconds * 1000 : backoffMs;
    backoffMs = Math.min(backoffMs * 2, 2_000);
    // A little jitter, so the clients a failure stopped together do not all come back together.
    await sleep(waitMs + Math.random() * 100);
  }
  return outcome;
}
