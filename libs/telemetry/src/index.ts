export { meter, serveMetrics } from './metrics.js';
export { startTelemetry, stopTelemetry } from './sdk.js';
export {
  annotateServerSpan,
  bindToServerSpan,
  serverSpanRouteSetter,
  traceAdmitted,
  traceIncoming,
  traceIncomingOnceAdmitted,
} from './server-span.js';
export {
  activeTraceIds,
  bindToActiveContext,
  captureContext,
  extractContext,
  type HeaderCarrier,
  injectContext,
  type MessagingSpanInfo,
  outsideSpans,
  startSpan,
  withCapturedContext,
  withConsumerSpan,
  withProducerSpan,
} from './tracing.js';
