export * from './client.js';
export type { components, operations, paths } from './generated/api.js';
export * from './webhooks/index.js';
