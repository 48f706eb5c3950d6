export { meter, serveMetrics } from './metrics.js';
export { startTelemetry, stopTelemetry } from './sdk.js';
export {
  activeTraceIds,
  annotateActiveSpan,
  captureContext,
  extractContext,
  type HeaderCarrier,
  injectContext,
  type MessagingSpanInfo,
  outsideSpans,
  serverSpanRouteSetter,
  startSpan,
  withCapturedContext,
  withConsumerSpan,
  withProducerSpan,
} from './tracing.js';
