-- The panel's inbox lists a workspace's conversations by their latest activity, a page at a time.
create index conversations_by_activity on conversations (workspace_id, updated_at desc, id desc);
