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
  type HttpClientCall,
  injectContext,
  type MessagingSpanInfo,
  outsideSpans,
  startSpan,
  tracer,
  withCapturedContext,
  withConsumerSpan,
  withHttpClientSpan,
} from './tracing.js';
