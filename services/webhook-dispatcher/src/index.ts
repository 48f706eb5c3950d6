export { DispatcherConfig } from './config.js';
export { type DispatcherOptions, dispatcherService } from './service.js';
