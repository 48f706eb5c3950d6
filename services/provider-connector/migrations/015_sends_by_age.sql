-- migrate: without a transaction
-- A send the provider accepted is remembered 30 days from when it was known sent (a repeated command is
-- answered from it, and a status callback finds our message by it), then deleted oldest first
-- (forgetSends): kept for ever, the table grew by a row with every message sent. An attempt whose outcome
-- is unknown has no provider id and is kept: it is what stops the message being sent twice. One that a
-- status settles a month on is known sent from then, and kept another 30 days for messaging to learn it.
create index concurrently if not exists sends_by_age on sends (sent_at) where provider_message_id is not null;
