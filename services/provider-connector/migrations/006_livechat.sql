-- Live chat: the visitors' sessions of a website widget and the messages of each, both ways. A session
-- is known by its token's SHA-256 only. `seq` orders a session's messages and is the id of each
-- Server-Sent Event, so a reconnecting widget names the last one it saw and gets the rest.
create table livechat_sessions (
  id uuid primary key,
  integration_id uuid not null references integrations (id) on delete cascade,
  token_sha256 bytea not null unique,
  visitor_name text not null,
  origin text not null,
  created_at timestamptz not null default now()
);

create table livechat_messages (
  seq bigint generated always as identity primary key,
  id uuid not null unique,
  session_id uuid not null references livechat_sessions (id) on delete cascade,
  author text not null check (author in ('visitor', 'operator')),
  text text not null,
  created_at timestamptz not null default now()
);
create index livechat_messages_by_session on livechat_messages (session_id, seq);
