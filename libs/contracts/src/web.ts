/**
 * What a browser may import (the panel): the channel descriptors and the event names, declared here once
 * and read by the panel's forms. Nothing below reaches Node's modules or the OpenAPI generator.
 */
export { type ChannelDescriptor, channelDescriptors, descriptorOf, integrationChannels } from './channels.js';
export { publicEventTypes } from './events.js';
export { testEventType } from './public-events.js';
