export { GatewayConfig } from './config.js';
export { type GatewayOptions, gatewayService, WorkspaceStore } from './service.js';
