-- Callbacks of providers that deliver each one once (Z-API), kept as verified and read and answered at
-- once, then recorded by the connector's workers (KeptCallbacks): a refusal, a slow answer or a crash
-- before the answer would lose them, since the provider never sends them again.
create table callback_inbox (
  id bigint generated always as identity primary key,
  workspace_id uuid not null,
  -- No foreign key: a cascade would delete rows behind callback_inbox_usage's back. A worker that finds
  -- the integration gone drops its callbacks, and counts them out.
  integration_id uuid not null,
  -- The batch as the adapter read it, as JSON text: kept byte for byte, never parsed by Postgres.
  batch text not null,
  bytes integer not null,
  trace_context jsonb,
  received_at timestamptz not null default now(),
  -- Not taken again before: a failed recording waits its backoff, without holding the integration's others.
  due_at timestamptz not null default now(),
  -- Being recorded until then by the worker that leased it; expired, another worker takes it.
  leased_until timestamptz not null default '-infinity',
  attempts integer not null default 0
);
-- Each integration's callbacks in the order they came: its oldest due one is the next it records.
create index callback_inbox_by_integration on callback_inbox (integration_id, id);
-- The integrations whose callbacks a worker is recording now, which no other worker takes meanwhile.
create index callback_inbox_by_lease on callback_inbox (leased_until);

-- What each workspace's kept callbacks weigh, so one workspace's backlog is bounded (CallbackInbox.keep)
-- without summing its rows on every callback.
create table callback_inbox_usage (
  workspace_id uuid primary key,
  bytes bigint not null default 0
);
