export { allowedCidrs, DispatcherConfig, defaultRetrySchedule } from './config.js';
export { type DispatcherOptions, dispatcherService } from './service.js';
