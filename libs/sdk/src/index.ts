export * from './client.js';
export * from './webhooks/index.js';
