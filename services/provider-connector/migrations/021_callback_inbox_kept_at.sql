-- A callback kept on the bus while Postgres refused it reaches the inbox hours after it came: its
-- received_at (the order an integration's callbacks are recorded in) is when it came, and kept_at when it
-- reached the inbox, from which its retries are counted (keepForMs), or one failure after a long outage
-- would give it up.
alter table callback_inbox add column if not exists kept_at timestamptz not null default now();
