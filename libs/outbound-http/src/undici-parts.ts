import { createRequire } from 'node:module';
import type * as Undici from 'undici';

// undici's index loads its whole surface (fetch, WebSocket, EventSource, cache stores, mock agents) and,
// through it, Node's own bundled copy of undici as well: 14 MiB of resident memory in every process that
// imports it, of which we use an Agent and `request`. These are the two modules that define them; the
// types still come from undici's own declarations. The undici instrumentation is unaffected: it listens
// on the diagnostics channels that undici's core publishes to, whichever entry loaded it.
const require = createRequire(import.meta.url);

export const Agent: typeof Undici.Agent = require('undici/lib/dispatcher/agent.js');
export type Agent = Undici.Agent;
export type { Dispatcher } from 'undici';

const dispatcherRequest: (
  this: Undici.Dispatcher,
  options: Undici.Dispatcher.RequestOptions,
) => Promise<Undici.Dispatcher.ResponseData> = require('undici/lib/api/api-request.js');

export type RequestOptions = Omit<Undici.Dispatcher.RequestOptions, 'origin' | 'path' | 'method'> & {
  method: Undici.Dispatcher.HttpMethod;
  dispatcher: Undici.Dispatcher;
};

/** undici's `request(url, options)` for a call that names its dispatcher, as every call of ours does. */
export function request(url: string | URL, options: RequestOptions): Promise<Undici.Dispatcher.ResponseData> {
  const target = typeof url === 'string' ? new URL(url) : url;
  // One copy, as undici's own `request` makes it: the dispatcher rides along unread.
  return dispatcherRequest.call(options.dispatcher, {
    ...options,
    origin: target.origin,
    path: target.search ? `${target.pathname}${target.search}` : target.pathname,
  });
}
