-- After a rotation the replaced secret keeps signing (alongside the new one) until it expires, so
-- receivers can switch secrets without dropping deliveries. Sealed like secret_sealed, to the endpoint.
alter table endpoints add column previous_secret_sealed text, add column previous_secret_expires_at timestamptz;
