-- The ids a channel names a customer by besides their number (WhatsApp's business-scoped user ids on the
-- Cloud API, LIDs on Evolution and Z-API), noted on the contact the number keys: a message that names the
-- customer by such an id alone (their number hidden) comes to that contact. A contact may have several
-- (one per channel, a BSUID per business portfolio); an id names one contact, the first it was noted on.
create table contact_user_ids (
  workspace_id uuid not null,
  channel text not null,
  user_id text not null,
  contact_id uuid not null references contacts (id),
  created_at timestamptz not null default now(),
  primary key (workspace_id, channel, user_id)
);
