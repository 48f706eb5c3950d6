import { metaMessagingAdapter } from './meta-messaging.js';

/**
 * photo speaks Instagram Messaging: `POST /{ig_user_id}/messages` with the account's token, the account
 * subscribed to the app for its webhooks (`object: "instagram"`).
 */
export const photoAdapter = metaMessagingAdapter({
  channel: 'photo',
  object: 'instagram',
  account: (config) => config.ig_user_id,
  token: (config) => config.access_token,
  // "The text must be UTF-8 and be 1000 bytes or less."
  textLimit: { max: 1000, unit: 'bytes' },
  messagingType: false,
  // `messaging_seen` reports reads by message id.
  subscribedFields: ['messages', 'messaging_postbacks', 'messaging_seen'],
  // Instagram's "This message is sent outside of allowed window" (code 10).
  windowSubcode: 2534022,
  // Business Use Case rate limit of the Instagram Platform.
  throttleCode: 80002,
  appSecretProof: false,
  conversationsPerSecond: 2,
  webhookAccount: { field: 'user_id', configKey: 'ig_user_id' },
});
