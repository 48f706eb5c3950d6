import { meter } from '@inbox/telemetry';
import { ProviderError } from './channel-adapter.js';

const providerDuration = meter('provider-connector').createHistogram('provider.request.duration', {
  description: 'Duration of calls to channel providers, by channel and outcome',
  unit: 's',
});

export function joinUrl(base: string, path: string): URL {
  return new URL(path, base.endsWith('/') ? base : `${base}/`);
}

/** One provider call: JSON in and out; unreachable providers and timeouts become ProviderError. */
export async function callProvider(
  channel: string,
  url: URL,
  init: { method: string; headers: Record<string, string>; body?: unknown; signal: AbortSignal },
): Promise<{ status: number; ok: boolean; body: unknown }> {
  const started = performance.now();
  const done = (outcome: string) =>
    providerDuration.record((performance.now() - started) / 1000, { channel, outcome });
  let response: Response;
  try {
    response = await fetch(url, {
      method: init.method,
      headers: { 'content-type': 'application/json', ...init.headers },
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
      signal: init.signal,
    });
  } catch (error) {
    done(init.signal.aborted ? 'timeout' : 'unreachable');
    throw new ProviderError(`${channel} unreachable: ${(error as Error).message}`, undefined, undefined, {
      cause: error,
    });
  }
  const body: unknown = await response.json().catch(() => undefined);
  done(response.ok ? 'ok' : `http_${response.status}`);
  return { status: response.status, ok: response.ok, body };
}

export function headerValue(
  headers: Record<string, string | string[] | undefined>,
  name: string,
): string | undefined {
  const value = headers[name.toLowerCase()];
  return Array.isArray(value) ? value[0] : value;
}
