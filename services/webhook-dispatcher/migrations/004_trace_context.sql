-- The trace the event arrived in, so every attempt (however much later) joins the original request's trace.
alter table deliveries add column trace_context jsonb;
