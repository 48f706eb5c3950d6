export { MessagingConfig } from './config.js';
export { normalisePhone } from './domain/phone.js';
export { messagingService } from './service.js';
