-- A provider's late word on an outbound message it had accepted: its error code (e.g. 131047, the closed
-- 24-hour window) and when it failed, for the conversation read, the admin API's list and the metric.
alter table messages add column delivery_error_code integer;
alter table messages add column delivery_failed_at timestamptz;

create index messages_delivery_failed on messages (workspace_id, delivery_failed_at desc, id desc)
  where delivery_status = 'failed';
