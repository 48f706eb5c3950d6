import { type MetaMessagingProduct, metaMessagingAdapter } from './meta-messaging.js';

/**
 * social speaks the Messenger Platform: `POST /{page_id}/messages` with the Page access token, the Page
 * subscribed to the app for its webhooks (`object: "page"`).
 */
export const messengerProduct: MetaMessagingProduct<'social'> = {
  channel: 'social',
  object: 'page',
  account: (config) => config.page_id,
  token: (config) => config.page_access_token,
  // "Text message ... must be UTF-8 and has a 2000 character limit."
  textLimit: { max: 2000, unit: 'characters' },
  messagingType: true,
  // Messenger's reads name only a watermark, never a message id: they are taken in as watermarks.
  subscribedFields: ['messages', 'messaging_postbacks', 'message_deliveries', 'message_reads'],
  // "(#10) This message is sent outside of allowed window."
  windowSubcode: 2018278,
  // Business Use Case rate limit of the Messenger Platform.
  throttleCode: 80006,
  appSecretProof: true,
  conversationsPerSecond: 2,
};

export const socialAdapter = metaMessagingAdapter(messengerProduct);
