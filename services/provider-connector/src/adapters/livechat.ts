import { type ChannelAdapter, InboundRejected, ProviderError } from './channel-adapter.js';

/**
 * Live chat has no third party: the connector is the provider. A send stores the operator's message for
 * the visitor's session (the contact's user id) and wakes the widget streams showing it; visitors'
 * messages arrive through the widget API, never through a provider callback.
 */
export const livechatAdapter: ChannelAdapter<'livechat'> = {
  channel: 'livechat',
  async sendText(_config, message, call) {
    if (!call.visitors) throw new ProviderError('live chat delivery is not available in this process');
    return call.visitors.deliver(message.to, message.text);
  },
  async registerInbound() {
    // Nothing to register: the widget posts to the connector's own widget API.
  },
  readInbound() {
    throw new InboundRejected('live chat takes visitors’ messages through its widget API only');
  },
};
