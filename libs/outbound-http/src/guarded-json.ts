import { isIP } from 'node:net';
import type { AddressPolicy } from './address-policy.js';
import { hostOf } from './check-url.js';
import { Deadline } from './deadline.js';
import { ForbiddenAddressError, guardedAgent } from './guarded-agent.js';
import { asTenant, type HostResolver } from './host-resolver.js';
import { type Agent, type Dispatcher, request } from './undici-parts.js';

/** An answer bigger than the caller's bound; the connection was dropped rather than read to the end. */
export class ResponseTooLargeError extends Error {
  override name = 'ResponseTooLargeError';
}

/** No complete answer (connection, headers and body) within the call's time bound. */
export class OutboundTimeoutError extends Error {
  override name = 'OutboundTimeoutError';
}

const defaultMaxBodyBytes = 1024 * 1024;

/** The address policy and the agent that enforces it, shared by every call of one service. */
export class OutboundGuard {
  readonly agent: Agent;
  /** Every call's time bound unless it gives its own. */
  readonly timeoutMs: number;

  constructor(
    readonly policy: AddressPolicy,
    options: { timeoutMs?: number; resolver?: HostResolver } = {},
  ) {
    this.timeoutMs = options.timeoutMs ?? 15_000;
    this.agent = guardedAgent(policy, this.timeoutMs, options.resolver);
  }

  close(): Promise<void> {
    return this.agent.close();
  }
}

export interface GuardedJsonOptions {
  /** Whom the call is made for (a workspace): its names take that tenant's turn (HostResolver). */
  tenant: string;
  method?: Dispatcher.HttpMethod;
  headers?: Record<string, string>;
  /** Sent as JSON; URLSearchParams are sent as a form (`application/x-www-form-urlencoded`). */
  body?: unknown;
  /** The caller's own cancellation; the call is bounded by `timeoutMs` as well. */
  signal?: AbortSignal;
  /** Connecting, waiting and reading the whole answer; the guard's when not given. */
  timeoutMs?: number;
  /** Default 1 MiB. */
  maxBodyBytes?: number;
}

export interface JsonAnswer {
  status: number;
  /** 2xx. A 3xx is an answer like any other: redirects are never followed. */
  ok: boolean;
  headers: Record<string, string | string[] | undefined>;
  /** The parsed JSON, or undefined when the answer was empty or not JSON. */
  body: unknown;
}

async function readBounded(
  response: Dispatcher.ResponseData,
  limit: number,
  origin: string,
): Promise<Buffer> {
  const tooLarge = () => {
    // Destroying the unread body aborts the request, which closes the connection instead of draining it.
    response.body.destroy();
    return new ResponseTooLargeError(`the answer from ${origin} exceeds ${limit} bytes`);
  };
  if (Number(response.headers['content-length']) > limit) throw tooLarge();
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of response.body) {
    size += (chunk as Buffer).length;
    if (size > limit) throw tooLarge();
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

function parseJson(bytes: Buffer): unknown {
  if (bytes.length === 0) return undefined;
  try {
    return JSON.parse(bytes.toString('utf8'));
  } catch {
    return undefined;
  }
}

/**
 * One JSON call to a URL someone else configured. The address is checked against the guard's policy
 * (literal hosts here, names at connect time by the agent); redirects are never followed (undici's
 * request() follows none), so credentials in the headers never travel to another origin; the answer is
 * read up to `maxBodyBytes`; the whole call is bounded by `timeoutMs`.
 */
export async function guardedJson(
  guard: OutboundGuard,
  url: string | URL,
  options: GuardedJsonOptions,
): Promise<JsonAnswer> {
  const target = new URL(url);
  const host = hostOf(target);
  if (isIP(host) && !guard.policy.permits(host))
    throw new ForbiddenAddressError(`${host} is a forbidden address`);
  const timeoutMs = options.timeoutMs ?? guard.timeoutMs;
  const deadline = new Deadline(timeoutMs, options.signal);
  const hasBody = options.body !== undefined;
  const form = options.body instanceof URLSearchParams;
  try {
    const response = await asTenant(options.tenant, () =>
      request(target, {
        method: options.method ?? 'GET',
        headers: {
          accept: 'application/json',
          ...(hasBody
            ? { 'content-type': form ? 'application/x-www-form-urlencoded' : 'application/json' }
            : {}),
          ...options.headers,
        },
        body: hasBody ? (form ? String(options.body) : JSON.stringify(options.body)) : undefined,
        dispatcher: guard.agent,
        signal: deadline.signal,
      }),
    );
    response.body.on('error', () => undefined);
    const bytes = await readBounded(response, options.maxBodyBytes ?? defaultMaxBodyBytes, target.origin);
    return {
      status: response.statusCode,
      ok: response.statusCode >= 200 && response.statusCode < 300,
      headers: response.headers,
      body: parseJson(bytes),
    };
  } catch (error) {
    // The caller's own cancellation is theirs to interpret; the time bound is ours.
    if (options.signal?.aborted) throw error;
    const code = (error as { code?: unknown }).code;
    if (deadline.signal.aborted || (typeof code === 'string' && code.endsWith('_TIMEOUT'))) {
      throw new OutboundTimeoutError(`no complete answer from ${target.origin} within ${timeoutMs} ms`, {
        cause: error,
      });
    }
    throw error;
  } finally {
    deadline.clear();
  }
}
