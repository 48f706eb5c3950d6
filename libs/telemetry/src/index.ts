export { meter, serveMetrics } from './metrics.js';
export { startTelemetry, stopTelemetry } from './sdk.js';
export {
  activeTraceIds,
  extractContext,
  type HeaderCarrier,
  injectContext,
  type MessagingSpanInfo,
  startSpan,
  withConsumerSpan,
  withProducerSpan,
} from './tracing.js';
