import { createRequire } from 'node:module';
import { runModuleSnippet } from '@inbox/testkit';
import { describe, expect, it } from 'vitest';

const entry = new URL('../src/http-module-face.ts', import.meta.url).href;

/** In a fresh process: imports `node:http` as an ES module, with or without the face built first. */
function probe(buildFirst: boolean): { bundledUndici: boolean; createServer: string; webSocket: string } {
  const script = `
    import { createRequire } from 'node:module';
    const { buildHttpModuleFace } = await import(${JSON.stringify(entry)});
    if (${buildFirst}) await buildHttpModuleFace();
    const http = await import('node:http');
    const bundledUndici = process.moduleLoadList.some((name) => name.includes('deps/undici/undici'));
    const required = createRequire(import.meta.url)('node:http');
    console.log(JSON.stringify({
      bundledUndici,
      createServer: typeof http.createServer,
      webSocket: typeof required.WebSocket,
    }));`;
  return runModuleSnippet(script);
}

// Node 20's node:http has no such getters, and its ES face never loaded undici.
const http = createRequire(import.meta.url)('node:http') as object;
const nodeHasUndiciGetters = typeof Object.getOwnPropertyDescriptor(http, 'WebSocket')?.get === 'function';

describe.runIf(nodeHasUndiciGetters)("node:http's ES module face", () => {
  it("is built without loading Node's bundled undici, which require('node:http') still reaches", () => {
    expect(probe(false)).toEqual({ bundledUndici: true, createServer: 'function', webSocket: 'function' });
    expect(probe(true)).toEqual({ bundledUndici: false, createServer: 'function', webSocket: 'function' });
  });
});
