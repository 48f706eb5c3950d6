export { AddressPolicy, isCidrList } from './address-policy.js';
export { checkUrl, hostOf, type UrlRefusal } from './check-url.js';
export { cidrListSetting } from './cidr-list-setting.js';
export { Deadline } from './deadline.js';
export { ForbiddenAddressError, guardedAgent, idleConnectionMs } from './guarded-agent.js';
export {
  type GuardedJsonOptions,
  guardedJson,
  type JsonAnswer,
  OutboundGuard,
  OutboundTimeoutError,
  ResponseTooLargeError,
} from './guarded-json.js';
export {
  asTenant,
  HostResolver,
  hostResolver,
  type ResolverSettings,
  type SystemLookup,
} from './host-resolver.js';
export { type Agent, type Dispatcher, request } from './undici-parts.js';
