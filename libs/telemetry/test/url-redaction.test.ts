// Credentials in URLs never reach a trace: the SDK configured exactly as the services configure it
// (sdkConfiguration), an outgoing call traced as the services trace theirs (withHttpClientSpan) that
// carries a token in its path and query, and an incoming request with the chat-official subscription
// handshake's query, through a real HTTP server traced as the services trace theirs (traceIncoming).
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { waitFor } from '@inbox/testkit';
import { SpanKind, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type StartedTelemetry, startTracing } from '../src/sdk.js';
import { traceIncoming } from '../src/server-span.js';
import { withHttpClientSpan } from '../src/tracing.js';
import { redactPath, redactQuery, redactUrl } from '../src/url-redaction.js';

const exporter = new InMemorySpanExporter();
let sdk: StartedTelemetry;
let server: import('node:http').Server;
let base: string;

beforeAll(async () => {
  sdk = startTracing('redaction-test', exporter);
  // Required after the SDK started, so the http instrumentation patches the module the server uses.
  const http = createRequire(import.meta.url)('node:http') as typeof import('node:http');
  server = http.createServer((req, res) => traceIncoming(req, res, () => res.end('ok')));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve));
  await sdk.shutdown();
});

async function finishedSpans(kind: SpanKind, count: number): Promise<ReadableSpan[]> {
  const provider = trace.getTracerProvider() as { getDelegate?: () => { forceFlush?: () => Promise<void> } };
  let spans: ReadableSpan[] = [];
  await waitFor(
    async () => {
      await provider.getDelegate?.().forceFlush?.();
      spans = exporter.getFinishedSpans().filter((span) => span.kind === kind);
      return spans.length >= count;
    },
    { what: `${count} ${SpanKind[kind]} span(s)`, timeoutMs: 5_000 },
  );
  return spans;
}

/** Everything a span shows an exporter, as text. */
const shown = (span: ReadableSpan) =>
  JSON.stringify({ name: span.name, attributes: span.attributes, events: span.events });

describe('URL redaction in traces', () => {
  it('keeps the alt-b token and client_token of an outgoing call out of client and server spans', async () => {
    exporter.reset();
    const url = `${base}/instances/abc/token/SECRET123/send-text?client_token=XYZ&phone=1`;
    const response = await withHttpClientSpan('GET', { method: 'GET', url }, (_span, headers) =>
      fetch(url, { headers }),
    );
    expect(await response.text()).toBe('ok');

    const [client] = await finishedSpans(SpanKind.CLIENT, 1);
    expect(client!.attributes['url.full']).toBe(
      `${base}/instances/abc/token/REDACTED/send-text?client_token=REDACTED&phone=1`,
    );
    const [incoming] = await finishedSpans(SpanKind.SERVER, 1);
    expect(incoming!.attributes['url.path']).toBe('/instances/abc/token/REDACTED/send-text');
    for (const span of exporter.getFinishedSpans()) {
      expect(shown(span)).not.toMatch(/SECRET123|XYZ/);
    }
  });

  it('keeps the subscription handshake values of an incoming request out of the server span', async () => {
    exporter.reset();
    const response = await fetch(`${base}/inbound/chat-official/x?hub.verify_token=SECRET&hub.challenge=42`);
    expect(response.status).toBe(200);

    const [incoming] = await finishedSpans(SpanKind.SERVER, 1);
    expect(incoming!.attributes['url.query']).toBe('hub.verify_token=REDACTED&hub.challenge=REDACTED');
    for (const span of exporter.getFinishedSpans()) {
      expect(shown(span)).not.toMatch(/SECRET|challenge=42/);
    }
  });

  it('applies one rule to every spelling of a URL', () => {
    expect(
      redactUrl('https://u:p@api.example/bot123:AA-b_c/sendMessage?apikey=k&Signature=s&q=1#access_token=t'),
    ).toBe(
      'https://REDACTED@api.example/botREDACTED/sendMessage?apikey=REDACTED&Signature=REDACTED&q=1#access_token=REDACTED',
    );
    expect(redactUrl('/cb?hub%2Everify_token=v&code=c&name=ana')).toBe(
      '/cb?hub%2Everify_token=REDACTED&code=REDACTED&name=ana',
    );
    // An escape hides the word a rule looks for, in a path segment and in a parameter's name alike.
    expect(redactUrl('/instances/a/to%6Ben/SECRET/x?api%4Bey=k&q=1')).toBe(
      '/instances/a/to%6Ben/REDACTED/x?api%4Bey=REDACTED&q=1',
    );
    expect(redactUrl('/bo%74123:AA/sendMessage')).toBe('/botREDACTED/sendMessage');
    // The secret the connector puts in the callback URLs it registers with alt-b (Z-API).
    expect(redactUrl('https://connector.example/inbound/alt-b/1f2e?callback_token=s3cret')).toBe(
      'https://connector.example/inbound/alt-b/1f2e?callback_token=REDACTED',
    );
  });

  it('passes a URL no rule could touch through as it is, and still finds each word in any case', () => {
    // Our routes and the providers' send paths hold none of the words: they come back untouched.
    for (const url of [
      '/api/external/messages/send',
      'http://127.0.0.1:4567/alt-a/instances/bench/messages?page=2&channel=alt-a',
      '/inbound/alt-b/1f2e?event=delivery',
    ])
      expect(redactUrl(url)).toBe(url);
    expect(redactQuery('?page=2')).toBe('?page=2');
    expect(redactPath('/v1/contacts/5511900000001')).toBe('/v1/contacts/5511900000001');
    // Every word a rule looks for, each spelled in another case than the rule's.
    for (const name of [
      'HUB.mode',
      'Token',
      'client_SECRET',
      'x-Api-Key',
      'SIGNATURE',
      'Password',
      'Code',
      'OAuth',
    ])
      expect(redactUrl(`/cb?${name}=v&q=1`)).toBe(`/cb?${name}=REDACTED&q=1`);
    expect(redactPath('/instances/a/TOKEN/s3cret/send-text')).toBe('/instances/a/TOKEN/REDACTED/send-text');
    expect(redactPath('/bot42:abc/sendMessage')).toBe('/botREDACTED/sendMessage');
    expect(redactUrl('https://user:pw@host.example/x')).toBe('https://REDACTED@host.example/x');
    // A `+` stands for a space in a query's name: a name spelled with one is still read.
    expect(redactQuery('api+key=k')).toBe('api+key=REDACTED');
  });
});
