import { randomInt } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import { GraphCode, GraphError } from './graph-error.js';
import { WEBHOOK_TIMEOUT_MS } from './webhook-transport.js';

/**
 * Meta keeps a callback URL only after it passed the verification request (every Graph product alike:
 * the Cloud API's overrides, an app's Messenger and Instagram webhooks); refused as Graph refuses it.
 */
export async function requireHandshake(
  fetchImpl: typeof fetch,
  callback: string,
  verifyToken: string,
): Promise<void> {
  const problem = await verifyCallback(fetchImpl, callback, verifyToken);
  if (problem === undefined) return;
  const message = `Callback verification failed with the following errors: ${problem}`;
  throw new GraphError(400, GraphCode.callbackVerificationFailed, message, problem);
}

/** Meta's handshake; undefined when the callback echoed the challenge, else what went wrong. */
async function verifyCallback(
  fetchImpl: typeof fetch,
  callback: string,
  verifyToken: string,
): Promise<string | undefined> {
  const challenge = String(randomInt(100_000_000, 2_000_000_000));
  const url = new URL(callback);
  url.searchParams.set('hub.mode', 'subscribe');
  url.searchParams.set('hub.verify_token', verifyToken);
  url.searchParams.set('hub.challenge', challenge);
  let status: number;
  let answer: string;
  try {
    const response = await fetchImpl(url, { signal: AbortSignal.timeout(WEBHOOK_TIMEOUT_MS) });
    status = response.status;
    answer = await response.text();
  } catch (error) {
    return `Could not reach the callback: ${error instanceof Error ? error.message : String(error)}`;
  }
  const httpStatus = `HTTP Status Code = ${status}; HTTP Message = ${STATUS_CODES[status] ?? 'Unknown'}`;
  if (status !== 200) return httpStatus;
  if (answer !== challenge) return `${httpStatus}; The response body did not match the challenge`;
  return undefined;
}
