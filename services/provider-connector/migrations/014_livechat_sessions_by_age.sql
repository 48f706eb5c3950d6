-- migrate: without a transaction
-- A live chat session ends 30 days after its last message, and the pruner deletes it a day later
-- (livechat/retention.ts), oldest first: kept for ever, a widget's visitors (a session costs a name) grew
-- the table without end. Built concurrently: a busy site's sessions must not wait for the index.
create index concurrently if not exists livechat_sessions_by_age on livechat_sessions (created_at, id);
