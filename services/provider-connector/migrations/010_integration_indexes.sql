-- The template sweep's claim takes the least recently attempted connected integration; the creation's
-- limit counts a workspace's integrations, connected or not.
create index integrations_template_due on integrations (templates_attempted_at nulls first, id)
  where status = 'connected';
create index integrations_by_workspace on integrations (workspace_id);
