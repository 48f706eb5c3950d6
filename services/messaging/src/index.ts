export { MessagingConfig } from './config.js';
export { normalisePhone } from './domain/phone.js';
export { PendingReconciler } from './reconcile-pending.js';
export { type MessagingOptions, messagingService } from './service.js';
