-- The creation's limit counts a workspace's endpoints, enabled or not (the older index holds enabled ones).
create index endpoints_of_workspace on endpoints (workspace_id);
