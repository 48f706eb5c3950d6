import { createRequire } from 'node:module';

/**
 * Exports of `node:http` that Node 24 defines as getters loading its bundled undici, for classes no
 * service uses.
 */
const undiciGetters = ['WebSocket', 'CloseEvent', 'MessageEvent'];

/**
 * Builds the ES module face of `node:http` without loading Node's bundled undici.
 *
 * Node 24 builds that face, on the first `import('node:http')` in a process (the OTLP exporter's transport
 * makes one on its first export), by reading every export, so the three getters above load undici: 13 MiB
 * of resident memory in every process (nodejs/node#59686). Built here first, with those three read as
 * undefined, the face never needs them again; `require('node:http')` keeps the real getters. On a Node
 * whose `node:http` has no such getter (20), nothing is done.
 */
export async function buildHttpModuleFace(): Promise<void> {
  const http = createRequire(import.meta.url)('node:http') as object;
  const getters = undiciGetters.flatMap((name) => {
    const descriptor = Object.getOwnPropertyDescriptor(http, name);
    return descriptor?.get ? [{ name, descriptor }] : [];
  });
  if (getters.length === 0) return;
  for (const { name } of getters)
    Object.defineProperty(http, name, { configurable: true, enumerable: true, value: undefined });
  try {
    await import('node:http');
  } finally {
    for (const { name, descriptor } of getters) Object.defineProperty(http, name, descriptor);
  }
}
