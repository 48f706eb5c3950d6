export type { RawBody } from './raw-body.js';
export { generateWebhookSecret, type Secrets, standardWebhookKeys } from './secrets.js';
export { type DeliveryHeaderInput, deliveryHeaders, signBody, standardSignature } from './sign.js';
export {
  type StandardWebhookHeaders,
  type VerificationResult,
  verifySignature,
  verifyStandardWebhook,
} from './verify.js';
