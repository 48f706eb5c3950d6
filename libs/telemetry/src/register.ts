// Loaded with `node --import @inbox/telemetry/register` so instrumentation is in place before any
// application module (pg, undici) is loaded.
//
// No ESM loader hook (`module.register` of import-in-the-middle): it runs in a thread of its own with a
// V8 isolate of its own, 15-22 MiB of resident memory in every process, and the instrumentations the
// services keep do without it. pg is CommonJS, patched as Node loads it even for an `import`; fetch is
// traced through undici's diagnostics channels; outgoing node:http is patched in place. The one that
// needed the hook, ioredis, is gone: with auto-pipelining its commands leave outside the request's span
// and it recorded none (bench/RESULTS.md, 2026-11-26, sixth session).
import { buildHttpModuleFace } from './http-module-face.js';
import { startTelemetry } from './sdk.js';

await buildHttpModuleFace();
startTelemetry();
