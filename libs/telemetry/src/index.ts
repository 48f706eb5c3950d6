export { meter, serveMetrics } from './metrics.js';
export { startTelemetry, stopTelemetry } from './sdk.js';
export { traceIncoming } from './server-span.js';
export {
  activeTraceIds,
  annotateActiveSpan,
  bindToActiveContext,
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
