/**
 * The name of every event, the only place it is spelled: the bus subject is `evt.<name>`, and the first
 * four are the spec's webhook events. Code refers to an event by these, never by a string of its own.
 */
export const eventTypes = {
  messageReceived: 'message.received',
  messageSent: 'message.sent',
  conversationAssigned: 'conversation.assigned',
  conversationResolved: 'conversation.resolved',
  inboundMessage: 'inbound.message',
  inboundStatus: 'inbound.status',
  inboundWatermark: 'inbound.watermark',
  leadMoved: 'lead.moved',
  callbackKept: 'connector.callback.kept',
} as const;
