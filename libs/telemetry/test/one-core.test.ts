// The SDK's packages pin @opentelemetry/core to their own version. A different one asked for here had npm
// nest a copy of core under each of them: nine instances loaded in every service, 256 more CommonJS
// modules and 1.9 MB more heap (bench/RESULTS.md, seventeenth session).
import { runModuleSnippet } from '@inbox/testkit';
import { expect, it } from 'vitest';

const sdk = new URL('../src/sdk.ts', import.meta.url).href;

it('loads one @opentelemetry/core, the one every SDK package shares, once tracing has started', () => {
  const script = `
    import { createRequire } from 'node:module';
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = 'http://127.0.0.1:9';
    const { startTelemetry, stopTelemetry } = await import(${JSON.stringify(sdk)});
    startTelemetry('one-core-probe');
    const loaded = Object.keys(createRequire(import.meta.url).cache)
      .filter((path) => path.includes('/@opentelemetry/core/'))
      .map((path) => path.slice(0, path.indexOf('/@opentelemetry/core/')));
    await stopTelemetry(100);
    console.log(JSON.stringify({ copies: [...new Set(loaded)] }));`;
  const { copies } = runModuleSnippet<{ copies: string[] }>(script);
  expect(copies).toHaveLength(1);
});
