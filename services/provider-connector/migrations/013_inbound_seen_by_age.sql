-- migrate: without a transaction
-- A provider message id is remembered for as long as its provider may deliver the callback again, then
-- deleted oldest first (forgetSeenIds): kept for ever, the table grew with every message taken in.
create index concurrently if not exists inbound_seen_by_age on inbound_seen (seen_at);
